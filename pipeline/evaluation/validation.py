"""Do the dials work? The validation figure of a release (the paper's Figure 7, from our own
reference reasoners and agents), `validation.png` and a Markdown table:

1. tool calls of the ideal agent (``budget_aware``: reads what the rules need within the
   budgets, reasons, confirms with one check) against H: it must grow with the horizon;
2. the reasoning ladder's success against B, one panel per H: the share of tasks each rung
   (one round of propagation, the fixpoint, the fixpoint with probing) decides; it must fall
   as B rises (``metadata.parquet``'s ``depth``);
3. domain consistency: the share of tasks that need more than the fixpoint against B, one line
   per domain: every domain must move the same way.

Points carry 95% intervals (Wilson for shares, t for means) and their n; a B without tasks
is a gap, never a line across it.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from gridbench_core.stats import wilson
from pipeline.evaluation.figures import pyplot
from pipeline.storage.depth import depth_table
from pipeline.storage.read import read_metadata
from solvers.ladder import FIXPOINT, ONE_ROUND, PROBING, RUNGS

Z = 1.959964
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
STYLES = ("-", "--", "-.", ":")


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% interval (normal approximation; a single value has none)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = Z * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def share_series(
    frame: pl.DataFrame, budgets: list[int], hit: pl.Expr
) -> list[tuple[float, float, float, int]]:
    """Per B: (share, low, high, n) of the rows where ``hit`` holds (NaN where no row)."""
    out = []
    for budget in budgets:
        part = frame.filter(pl.col("decoy_budget") == budget)
        n = part.height
        hits = int(part.select(hit.cast(pl.Int64).sum()).item() or 0) if n else 0
        low, high = wilson(hits, n)
        out.append((hits / n if n else float("nan"), low, high, n))
    return out


def _errorbars(axis, xs, series, label, k):  # type: ignore[no-untyped-def]
    ys = [s[0] for s in series]
    low = [s[0] - s[1] if s[3] else float("nan") for s in series]
    high = [s[2] - s[0] if s[3] else float("nan") for s in series]
    axis.errorbar(
        xs,
        ys,
        yerr=[low, high],
        label=label,
        marker=MARKERS[k % len(MARKERS)],
        linestyle=STYLES[k % len(STYLES)],
        capsize=3,
        markersize=5,
    )


def _x_axis(axis, budgets: list[int]) -> None:  # type: ignore[no-untyped-def]
    axis.set_xticks(range(len(budgets)), [str(b) for b in budgets], fontsize=8)
    axis.set_xlim(-0.5, len(budgets) - 0.5)
    axis.set_xlabel("decoy budget B")


def ladder_panels(fig, spec, meta: pl.DataFrame, budgets: list[int]) -> None:  # type: ignore[no-untyped-def]
    """One small panel per H: the share of tasks each rung decides, against B."""
    hiddens = sorted(set(meta["hidden_slots"].to_list()))
    inner = spec.subgridspec(1, len(hiddens), wspace=0.08)
    for n, hidden in enumerate(hiddens):
        axis = fig.add_subplot(inner[0, n])
        part = meta.filter(pl.col("hidden_slots") == hidden)
        for k, rung in enumerate((ONE_ROUND, FIXPOINT, PROBING)):
            series = share_series(part, budgets, pl.col("depth") <= rung)
            _errorbars(axis, range(len(budgets)), series, RUNGS[rung], k)
        counts = sorted({s[3] for s in share_series(part, budgets, pl.col("depth") >= 0) if s[3]})
        axis.set_title(f"H = {hidden} (n = {'/'.join(map(str, counts))} per B)", fontsize=9)
        axis.set_ylim(-0.05, 1.05)
        _x_axis(axis, budgets)
        if n == 0:
            axis.set_ylabel("share of tasks the rung decides")
        else:
            axis.set_yticklabels([])
        if n == len(hiddens) - 1:
            axis.legend(fontsize=7, loc="upper right")


def domain_panel(axis, meta: pl.DataFrame, budgets: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Per domain: the share of tasks that need more than the fixpoint, against B."""
    for k, domain in enumerate(sorted(set(meta["domain"].to_list()))):
        part = meta.filter(pl.col("domain") == domain)
        series = share_series(part, budgets, pl.col("depth") > FIXPOINT)
        n = sum(s[3] for s in series)
        _errorbars(axis, range(len(budgets)), series, f"{domain} (n={n})", k)
    axis.set_ylim(-0.05, 1.05)
    _x_axis(axis, budgets)
    axis.set_ylabel("share needing more than the fixpoint")
    axis.set_title("domain consistency", fontsize=10)
    axis.legend(fontsize=7, loc="upper left")


def calls_panel(axis, calls: pl.DataFrame, source: str) -> None:  # type: ignore[no-untyped-def]
    """Mean tool calls of the ideal agent against H (one line per failure rate)."""
    hiddens = sorted(set(calls["hidden_slots"].to_list()))
    for k, rate in enumerate(sorted(set(calls["failure_rate"].to_list()))):
        means, lows, highs, ns = [], [], [], []
        for hidden in hiddens:
            values = calls.filter((pl.col("hidden_slots") == hidden) & (pl.col("failure_rate") == rate))
            steps = [float(v) for v in values["steps"].to_list()]
            mean, low, high = mean_interval(steps) if steps else (float("nan"),) * 3
            means.append(mean)
            lows.append(mean - low)
            highs.append(high - mean)
            ns.append(len(steps))
        axis.errorbar(
            hiddens,
            means,
            yerr=[lows, highs],
            marker=MARKERS[k],
            linestyle=STYLES[k % len(STYLES)],
            capsize=3,
            label=f"failure rate {rate:g} (n={min(ns)}-{max(ns)} per H)",
        )
    axis.set_xlabel("hidden cells H")
    axis.set_ylabel("tool calls per episode (mean, 95% CI)")
    axis.set_title(f"ideal agent ({source})", fontsize=10)
    axis.set_xticks(hiddens, [str(h) for h in hiddens], fontsize=8)
    axis.legend(fontsize=7)


def validation_figure(meta: pl.DataFrame, calls: pl.DataFrame, source: str, title: str, out: Path) -> Path:
    """Draw the three parts into ``out`` (a PNG) and return its path."""
    budgets = sorted(set(meta["decoy_budget"].to_list()))
    plt = pyplot()
    fig = plt.figure(figsize=(15, 8.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1], hspace=0.45, wspace=0.2)
    calls_panel(fig.add_subplot(grid[0, 0]), calls, source)
    domain_panel(fig.add_subplot(grid[0, 1]), meta, budgets)
    ladder_panels(fig, grid[1, :], meta, budgets)
    fig.suptitle(title, fontsize=12)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


__all__ = ["depth_table", "validation_figure", "wilson"]


def validation_report(release: Path, calls: pl.DataFrame, source: str, out: Path) -> list[str]:
    """``validation.png`` for ``release`` (``calls``: the ideal agent's episodes, one row each
    with domain, hidden_slots, decoy_budget, failure_rate, steps and success; ``source`` says
    where they come from) and the Markdown that goes with it."""
    meta = read_metadata(release)  # listed, bounded, its columns declared: never a hang
    if "depth" not in meta.columns or meta["depth"].null_count() == meta.height:
        return ["## Do the dials work?", "", f"{release.name} records no reasoning depth (built before it)."]
    title = f"Do the dials work? {release.name}"
    path = validation_figure(meta, calls, source, title, out / "validation.png")
    solved = sum(bool(v) for v in calls["success"].to_list()) / max(calls.height, 1)
    return [
        "## Do the dials work?",
        "",
        f"Reasoning depth by B over {meta.height} tasks (the lowest rung of the reasoning ladder that "
        "decides a task; `beyond fixpoint`: probing or search is needed):",
        "",
        depth_table(meta),
        "",
        f"Ideal agent ({source}): {calls.height} episodes, success {solved:.3f}; its tool calls per H "
        "are in the figure.",
        "",
        f"![validation]({path.name})",
    ]


__all__ = ["validation_figure", "validation_report"]
