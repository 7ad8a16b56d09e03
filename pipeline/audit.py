"""`python -m pipeline.audit release=PATH` (make audit): can the truth be read off a release
without checking the rules? Policies (per cell and joint over rows, columns and the grid) and
classifiers (pipeline/evaluation/integrity.py) on the decoy cells of every task, and rule-free
classifiers trained on a companion build of another seed (pipeline/evaluation/companion.py);
writes `audit.json` and `audit.md` under `output`, prints the tables, and exits 1 when a
policy or classifier that reads no rule is above chance + 0.03 (its interval clear of it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from omegaconf import DictConfig

from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.companion import companion_pairs
from pipeline.evaluation.integrity import audit, audit_markdown
from pipeline.storage.read import release_pairs

register_configs()


def run_audit(cfg: DictConfig) -> int:
    """Audit the integrity of ``cfg.release``: write ``audit.json`` and ``audit.md`` and print the tables."""
    start = time.perf_counter()
    release = Path(str(cfg.release))
    pairs = release_pairs(release)
    companion = None
    if cfg.transfer:
        say(f"audit: companion build of {len(pairs)} tasks (seed + {int(cfg.transfer_seed_offset)})")
        companion = companion_pairs(release, int(cfg.transfer_seed_offset), int(cfg.workers))
    say(f"audit: policies and classifiers on {len(pairs)} tasks")
    report = audit(pairs, int(cfg.splits), int(cfg.seed), companion, progress=say)
    out = Path(str(cfg.output)) if cfg.output else Path("outputs/audits") / release.name
    out.mkdir(parents=True, exist_ok=True)
    text = f"# Integrity audit of {release.name}\n\n" + audit_markdown(report)
    (out / "audit.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "audit.md").write_text(text)
    print(text)
    print(f"audit -> {out / 'audit.md'} ({time.perf_counter() - start:.1f}s)")
    if report["failures"]:
        print(
            f"audit FAILED: {len(report['failures'])} rule-free reader(s) above chance + 0.03",
            file=sys.stderr,
        )
        return 1
    return 0


def say(message: str) -> None:
    """One progress line, at once (a long audit is never silent)."""
    print(message, flush=True)


main = command("audit")(run_audit)


if __name__ == "__main__":
    main()
