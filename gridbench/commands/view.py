"""`python -m gridbench.commands.view` (make view): the results explorer of a set of runs, one static
HTML folder that opens from disk (``pipeline/evaluation/explorer.py`` does the work)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from gridbench_core import paths
from gridbench_core.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs
from pipeline.evaluation.explorer import build_view

register_configs()


def view(cfg: DictConfig) -> int:
    """Write the explorer of the runs under ``cfg.runs_root``; the exit code."""
    roots = [Path(str(r)) for r in ([cfg.runs_root] if isinstance(cfg.runs_root, str) else cfg.runs_root)]
    if not roots:
        raise UserError("runs_root=[] names no folder; give runs_root=outputs/runs/<release>")
    for root in roots:
        if not root.is_dir():
            raise UserError(
                f"runs_root={root} is not a folder; runs are under outputs/runs/<release> (make eval)"
            )
    if cfg.release and len(roots) > 1:
        raise UserError(
            "release= names one release; with several runs_root, leave it out (each is found by name)"
        )
    releases = {
        root.name: Path(str(cfg.release)) if cfg.release else paths.RELEASES / root.name for root in roots
    }
    out = Path(str(cfg.output)) if cfg.output else paths.VIEWS / roots[0].name
    stats = build_view(roots, out, releases)
    print(
        f"view -> {out / 'index.html'} ({stats.episodes} episodes, {stats.transcripts} transcripts, "
        f"{stats.tasks} tasks; {stats.bytes / 1e6:.1f} MB, {stats.seconds:.1f}s); open it in a browser"
    )
    return 0


main = command("view")(view)


if __name__ == "__main__":
    main()
