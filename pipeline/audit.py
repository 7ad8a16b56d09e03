"""`python -m pipeline.audit release=PATH` (make audit): can the truth be read off a release
without checking the rules? Policies and classifiers (pipeline/evaluation/integrity.py) on the decoy
cells of every task; writes `audit.json` and `audit.md` under `output` and prints the tables.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from omegaconf import DictConfig

from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.integrity import FEATURE_SETS, MODELS, audit, audit_markdown
from pipeline.parallel import Progress
from pipeline.storage.read import release_pairs

register_configs()


def run_audit(cfg: DictConfig) -> int:
    """Audit the integrity of ``cfg.release``: write ``audit.json`` and ``audit.md`` and print the tables."""
    start = time.perf_counter()
    release = Path(str(cfg.release))
    pairs = release_pairs(release)
    stages = 2 + (len(FEATURE_SETS) * len(MODELS) if int(cfg.splits) > 0 else 0)
    progress = Progress(stages, f"audit {release.name}", unit="stage")
    stage: list[tuple[str, float]] = []  # the stages so far, with their start times

    def step(name: str) -> None:
        if stage:
            progress.update()
        stage.append((name, time.perf_counter()))
        print(f"audit {release.name}: {name}", flush=True)

    progress.status = lambda: (
        f"{stage[-1][0]} for {time.perf_counter() - stage[-1][1]:.0f} s" if stage else ""
    )
    try:
        report = audit(pairs, int(cfg.splits), int(cfg.seed), step)
        progress.update()  # the last stage is done
    finally:
        progress.close()
    out = Path(str(cfg.output)) if cfg.output else Path("outputs/audits") / release.name
    out.mkdir(parents=True, exist_ok=True)
    text = f"# Integrity audit of {release.name}\n\n" + audit_markdown(report)
    (out / "audit.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "audit.md").write_text(text)
    print(text)
    print(f"audit -> {out / 'audit.md'} ({time.perf_counter() - start:.1f}s)")
    return 0


main = command("audit")(run_audit)


if __name__ == "__main__":
    main()
