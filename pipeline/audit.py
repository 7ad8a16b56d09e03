"""`python -m pipeline.audit release=PATH` (make audit): can the truth be read off a release
without checking the rules? Policies and classifiers (pipeline/integrity.py) on the decoy
cells of every task; writes `audit.json` and `audit.md` under `output` and prints the tables.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from pipeline.cli import run_cli
from pipeline.config import register_configs
from pipeline.integrity import audit, audit_markdown
from pipeline.verify_release import read_manifest
from solvers.task import Answer, Task
from solvers.task_io import answer_from_dict, task_from_dict

register_configs()


def release_pairs(release: Path) -> list[tuple[Task, Answer]]:
    """Every (task, answer) of a release, in file order."""
    manifest = read_manifest(release)
    pairs = []
    for relative in sorted(name for name in manifest.get("files", {}) if name.startswith("tasks/")):
        task = task_from_dict(json.loads((release / relative).read_text()))
        answer_path = release / "answers" / relative[len("tasks/"):]
        pairs.append((task, answer_from_dict(json.loads(answer_path.read_text()))))
    return pairs


def run_audit(cfg: DictConfig) -> int:
    start = time.perf_counter()
    release = Path(str(cfg.release))
    pairs = release_pairs(release)
    report = audit(pairs, int(cfg.splits), int(cfg.seed))
    out = Path(str(cfg.output)) if cfg.output else Path("outputs/audits") / release.name
    out.mkdir(parents=True, exist_ok=True)
    text = f"# Integrity audit of {release.name}\n\n" + audit_markdown(report)
    (out / "audit.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "audit.md").write_text(text)
    print(text)
    print(f"audit -> {out / 'audit.md'} ({time.perf_counter() - start:.1f}s)")
    return 0


@hydra.main(version_base=None, config_path="../conf/apps", config_name="audit")
def main(cfg: DictConfig) -> None:
    run_cli(run_audit, cfg)


if __name__ == "__main__":
    main()
