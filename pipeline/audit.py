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
from pipeline.evaluation.integrity import audit, audit_markdown
from pipeline.storage.read import release_pairs

register_configs()


def run_audit(cfg: DictConfig) -> int:
    """Audit the integrity of ``cfg.release``: write ``audit.json`` and ``audit.md`` and print the tables."""
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


main = command("audit")(run_audit)


if __name__ == "__main__":
    main()
