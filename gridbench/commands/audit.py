"""`python -m gridbench.commands.audit release=PATH` (make audit): can the truth be read off a release
without checking the rules? Policies (per cell and joint over rows, columns and the grid) and
classifiers (pipeline/integrity/) on the decoy cells of every task, and rule-free
classifiers trained on a companion build of another seed (pipeline/storage/companion.py);
writes `audit.json` and `audit.md` under `output`, prints the tables, and exits 1 when a
policy or classifier that reads no rule is above chance + 0.03 (its interval clear of it).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from omegaconf import DictConfig

from gridbench_core import paths
from gridbench_core.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.integrity import FEATURE_SETS, MODELS, audit, audit_markdown
from pipeline.integrity.soft import RUNG_NAMES
from pipeline.parallel import Progress, check_workers
from pipeline.storage.companion import companion_pairs
from pipeline.storage.read import release_pairs, shown
from pipeline.storage.safe import inside

register_configs()
AUDITS = paths.OUTPUTS / "audits"
BOUND_RUNGS = tuple(RUNG_NAMES)  # the command scores soft heuristics after every rung (the card: all options)
FOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}\Z")  # a release folder's name, e.g. gridbench-v2.0.0


def run_audit(cfg: DictConfig) -> int:
    """Audit the integrity of ``cfg.release``: write ``audit.json`` and ``audit.md`` and print the tables."""
    start = time.perf_counter()
    for key, value, high in (("splits", cfg.splits, 1000), ("seed", cfg.seed, 2**63 - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise UserError(f"{key}={value} must be a whole number in 0..{high}")
    workers = check_workers(cfg.workers, "workers")
    offset = cfg.transfer_seed_offset
    if isinstance(offset, bool) or not isinstance(offset, int) or not 1 <= abs(offset) <= 2**31:
        raise UserError(f"transfer_seed_offset={offset} must be a whole number, not 0, within +-2**31")
    release = Path(str(cfg.release))
    out = audit_folder(release, str(cfg.output))
    pairs = release_pairs(release)
    if cfg.transfer:  # built before the progress display: it shows its own
        print(f"audit {release.name}: companion build of {len(pairs)} tasks (seed + {offset})", flush=True)
    companion = companion_pairs(release, offset, workers) if cfg.transfer else None
    stages = 3 + (len(FEATURE_SETS) * len(MODELS) if int(cfg.splits) > 0 else 0) + bool(companion)
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
        report = audit(pairs, int(cfg.splits), int(cfg.seed), step, companion, BOUND_RUNGS)
        progress.update()  # the last stage is done
    finally:
        progress.close()
    out.mkdir(parents=True, exist_ok=True)
    text = f"# Integrity audit of {release.name}\n\n" + audit_markdown(report)
    (out / "audit.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "audit.md").write_text(text)
    print(text)
    print(f"audit -> {out / 'audit.md'} ({time.perf_counter() - start:.1f}s)")
    if report["failures"]:
        print(
            f"audit FAILED: {len(report['failures'])} finding(s) clear of chance (or of the control) + 0.03",
            file=sys.stderr,
        )
        return 1
    return 0


def audit_folder(release: Path, output: str) -> Path:
    """Where the audit of ``release`` is written: ``output``, or ``outputs/audits/<its folder
    name>`` (which may not leave outputs/audits)."""
    if output:
        return Path(output)
    name = release.name or release.resolve().name
    if not FOLDER.match(name) or ".." in name:
        raise UserError(f"release={shown(release)}: its folder name cannot name an audit; give output=DIR")
    return inside(AUDITS, AUDITS / name, "the audit folder")


main = command("audit")(run_audit)


if __name__ == "__main__":
    main()
