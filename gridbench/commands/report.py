"""`python -m gridbench.commands.report` (make report): figures and a summary comparing the runs of a
release (``runs_root``: one folder or a list, one per release), and the release's validation
figure (does each dial work? ``validation.png`` and ``validation.md``; with ``release=PATH``
alone, no runs are needed). The work is ``pipeline/evaluation/summary.py`` and
``pipeline/evaluation/validation.py``."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from omegaconf import DictConfig

from gridbench.agents.harness import ideal_calls
from gridbench_core import paths
from gridbench_core.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.summary import load_runs, make_report
from pipeline.evaluation.validation import validation_report
from pipeline.storage.read import release_pairs

register_configs()


def report(cfg: DictConfig) -> int:
    """Write the figures and summary comparing the runs under ``cfg.runs_root`` and the
    validation figure of the release; the exit code."""
    roots = [Path(str(r)) for r in ([cfg.runs_root] if isinstance(cfg.runs_root, str) else cfg.runs_root)]
    if not roots:
        raise UserError("runs_root=[] names no folder; give runs_root=outputs/runs/<release>")
    out = Path(str(cfg.output)) if cfg.output else paths.REPORTS / roots[0].name
    release = Path(str(cfg.release)) if cfg.release else RELEASES / roots[0].name
    has_runs = any(any(root.glob(f"*/{name}*")) for root in roots for name in ("results", "episodes"))
    if not has_runs and not cfg.release:
        return make_report(roots, out)  # says there is nothing to report and how to make it
    code = make_report(roots, out) if has_runs else 0
    if (release / "manifest.json").is_file():
        out.mkdir(parents=True, exist_ok=True)
        runs = load_runs(roots)[0] if has_runs else None
        ideal = (
            runs.filter(pl.col("policy") == "budget_aware") if runs is not None and "policy" in runs else None
        )
        if ideal is not None and ideal.height:
            calls, source = ideal, "budget_aware runs"
        else:
            calls, source = ideal_calls(release_pairs(release)), "budget_aware played here, paper budgets"
        text = validation_report(release, calls, source, out)
        (out / "validation.md").write_text("\n".join(text) + "\n")
        print(f"validation -> {out / 'validation.md'} and {out / 'validation.png'}")
    elif cfg.release:
        raise UserError(f"release={cfg.release} is not a release (no manifest.json)")
    return code


RELEASES = paths.RELEASES  # where a run folder's release is looked for by name


main = command("report")(report)


if __name__ == "__main__":
    main()
