"""`python -m pipeline.audit release=PATH` (make audit): can the truth be read off a release
without checking the rules? Policies and classifiers (pipeline/evaluation/integrity.py) on the decoy
cells of every task; writes `audit.json` and `audit.md` under `output` and prints the tables.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from omegaconf import DictConfig

from gridbench.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.integrity import audit, audit_markdown
from pipeline.storage.read import release_pairs, shown
from pipeline.storage.safe import inside

register_configs()
AUDITS = Path("outputs/audits")
FOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")  # a release folder's name, e.g. gridbench-v1.0.0


def run_audit(cfg: DictConfig) -> int:
    """Audit the integrity of ``cfg.release``: write ``audit.json`` and ``audit.md`` and print the tables."""
    start = time.perf_counter()
    for key, value, high in (("splits", cfg.splits, 1000), ("seed", cfg.seed, 2**63 - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise UserError(f"{key}={value} must be a whole number in 0..{high}")
    release = Path(str(cfg.release))
    pairs = release_pairs(release)
    report = audit(pairs, int(cfg.splits), int(cfg.seed))
    if cfg.output:
        out = Path(str(cfg.output))
    else:  # the release's folder name becomes a folder: it may not leave outputs/audits
        name = release.name or release.resolve().name
        if not FOLDER.match(name) or ".." in name:
            raise UserError(
                f"release={shown(release)}: its folder name cannot name an audit; give output=DIR"
            )
        out = inside(AUDITS, AUDITS / name, "the audit folder")
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
