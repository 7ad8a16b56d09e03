"""`python -m pipeline.report` (make report): figures and a summary comparing the runs of a
release (``runs_root``: one folder or a list, one per release). The work is
``pipeline/evaluation/report.py``."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from gridbench.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.report import make_report

register_configs()


def report(cfg: DictConfig) -> int:
    """Write the figures and summary comparing the runs under ``cfg.runs_root``; the exit code."""
    roots = [cfg.runs_root] if isinstance(cfg.runs_root, str) else list(cfg.runs_root)
    if not roots:
        raise UserError("runs_root=[] names no folder; give runs_root=outputs/runs/<release>")
    return make_report([Path(str(root)) for root in roots], Path(str(cfg.output)))


main = command("report")(report)


if __name__ == "__main__":
    main()
