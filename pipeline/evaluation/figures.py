"""The report's figures, drawn to be read: every heatmap cell and every point says its
success, its 95% Wilson interval and how many episodes it rests on (n); a curve has a gap
where a run has no episode at a B (never a line across it); a single B is one tick; series
differ by colour, marker and line style; steps and tokens have their own panels.

- ``heatmap_<run>.png``: success over H x B, one panel per failure rate (Figure 9);
- ``domains_p<rate>.png``: success per run x domain (Figure 2);
- ``success_vs_B_p<rate>.png``: success, steps and (when a run used a model) tokens against
  the decoy budget, one series per run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from gridbench_core.errors import terminal_text
from gridbench_core.stats import wilson

if TYPE_CHECKING:
    from types import ModuleType

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINES = ("-", "--", ":", "-.")
EMPTY = "#dddddd"
# What a figure may cost is bounded by what it draws, not by how many distinct values a
# results table holds: a side of at most MAX_INCHES, words in a heatmap's cells only up to
# MAX_LABELLED cells (beyond, the colours say it; summary.md has the numbers), at most
# MAX_TICKS tick labels on an axis, at most MAX_PANELS failure rates in one figure.
MAX_INCHES = 30.0
MAX_LABELLED = 400
MAX_TICKS = 40
MAX_PANELS = 8


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg back-end, imported when a figure is drawn (0.2-0.3 s:
    a command or test that only reads results never pays it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label(value: Any) -> str:
    """A name from a results table as a figure shows it: control characters escaped (a glyph
    that is missing would otherwise reach the terminal, raw, in matplotlib's warning), cut."""
    return terminal_text(value, 60)


def bounded(width: float, height: float) -> tuple[float, float]:
    """A figure size with neither side beyond :data:`MAX_INCHES`."""
    return min(width, MAX_INCHES), min(height, MAX_INCHES)


def _ticks(count: int) -> list[int]:
    """The positions that get a tick label: all, or every k-th so that at most MAX_TICKS do."""
    step = max(1, -(-count // MAX_TICKS))
    return list(range(0, count, step))


def cells(part: pl.DataFrame, keys: list[str]) -> dict[tuple, tuple[float, int, float, float]]:
    """(success rate, n, interval low, interval high) of every combination of ``keys``."""
    table = part.group_by(keys).agg(
        pl.col("success").cast(pl.Float64).sum().alias("wins"), pl.len().alias("n")
    )
    out = {}
    for row in table.iter_rows(named=True):
        low, high = wilson(row["wins"], row["n"])
        out[tuple(row[k] for k in keys)] = (row["wins"] / row["n"], row["n"], low, high)
    return out


def _grid_panel(
    axis: Any, part: pl.DataFrame, rows: str, cols: str, labels: tuple[str, str], origin: str = "lower"
) -> Any:
    """A heatmap of success over ``rows`` x ``cols``; each cell: percent, interval, n."""
    data = cells(part, [rows, cols])
    row_keys = sorted({k[0] for k in data})
    col_keys = sorted({k[1] for k in data})
    grid = [[data.get((r, c), (float("nan"),))[0] for c in col_keys] for r in row_keys]
    import matplotlib

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=EMPTY)
    image = axis.imshow(grid, vmin=0, vmax=1, cmap=cmap, aspect="auto", origin=origin)
    shown_cols, shown_rows = _ticks(len(col_keys)), _ticks(len(row_keys))
    axis.set_xticks(shown_cols, [label(col_keys[j]) for j in shown_cols], fontsize=8)
    axis.set_yticks(shown_rows, [label(row_keys[i]) for i in shown_rows], fontsize=8)
    axis.set_xlabel(labels[0], fontsize=9)
    axis.set_ylabel(labels[1], fontsize=9)
    if len(row_keys) * len(col_keys) > MAX_LABELLED:
        return image  # too many cells to write in: the colours say it
    up = 1 if origin == "lower" else -1  # which way is up on the axis
    big = 9 if len(col_keys) <= 7 else 8 if len(col_keys) <= 10 else 6.5
    small = big - 2
    for i, r in enumerate(row_keys):
        for j, c in enumerate(col_keys):
            if (r, c) not in data:
                axis.text(j, i, "no data", ha="center", va="center", fontsize=small, color="#555555")
                continue
            rate, n, low, high = data[(r, c)]
            color = "white" if rate < 0.55 else "black"
            axis.text(
                j,
                i + 0.14 * up,
                f"{rate:.0%}",
                ha="center",
                va="center",
                fontsize=big,
                color=color,
                weight="bold",
            )
            axis.text(
                j,
                i - 0.2 * up,
                f"{low:.0%}\u2013{high:.0%}\nn={n}",
                ha="center",
                va="center",
                fontsize=small,
                color=color,
                linespacing=1.0,
            )
    return image


def heatmap(frame: pl.DataFrame, run: str, release: str, out: Path) -> Path:
    """Success over H x B for one run, one panel per failure rate."""
    part = frame.filter(pl.col("run") == run)
    every = sorted(set(part["failure_rate"].to_list()))
    rates = every[:MAX_PANELS]
    width = min(max(part["decoy_budget"].n_unique(), 2), MAX_LABELLED)
    height = min(max(part["hidden_slots"].n_unique(), 2), MAX_LABELLED)
    size = bounded(max(7.0, 0.95 * width * len(rates) + 1.8), 0.8 * height + 1.8)
    plt = pyplot()
    figure, axes = plt.subplots(1, len(rates), figsize=size, squeeze=False, layout="constrained")
    image = None
    for axis, rate in zip(axes[0], rates, strict=True):
        panel = part.filter(pl.col("failure_rate") == rate)
        image = _grid_panel(axis, panel, "hidden_slots", "decoy_budget", ("decoy budget B", "hidden slots H"))
        axis.set_title(f"tool failure rate {rate:g} ({panel.height} episodes)", fontsize=10)
    figure.colorbar(image, ax=axes[0].tolist(), shrink=0.85, label="success", pad=0.02)  # type: ignore[arg-type]
    more = f"; the first {len(rates)} of {len(every)} failure rates" if len(every) > len(rates) else ""
    figure.suptitle(
        f"{label(run)} on {label(release)}: success over H x B{more}\n"
        "(cell: success, 95% Wilson interval, n episodes)",
        fontsize=11,
    )
    path = out / f"heatmap_{file_name(run)}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def domain_heatmap(frame: pl.DataFrame, rate: float, release: str, out: Path) -> Path:
    """Success per run and domain at failure rate ``rate``."""
    part = frame.filter(pl.col("failure_rate") == rate)
    runs = part["run"].n_unique()
    domains = part["domain"].n_unique()
    plt = pyplot()
    figure, axis = plt.subplots(figsize=bounded(1.2 * domains + 4.2, 0.8 * runs + 1.9))
    image = _grid_panel(axis, part, "run", "domain", ("domain", ""), origin="upper")
    figure.colorbar(image, ax=axis, shrink=0.85, label="success")
    axis.set_title(
        f"{label(release)}: success per domain, tool failure rate {rate:g}\n"
        "(cell: success, 95% Wilson interval, n)",
        fontsize=10,
    )
    path = out / f"domains_p{rate:g}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def _series(part: pl.DataFrame, budgets: list[int]) -> dict[str, list[float]]:
    """Per B of ``budgets`` (NaN where the run has no episode): success, its interval, n,
    mean steps and mean tokens."""
    keys = ("success", "low", "high", "n", "steps", "tokens")
    out: dict[str, list[float]] = {key: [] for key in keys}
    tokens = [c for c in ("prompt_tokens", "completion_tokens") if c in part.columns]
    for budget in budgets:
        rows = part.filter(pl.col("decoy_budget") == budget)
        if not rows.height:
            for key in keys:
                out[key].append(float("nan"))
            continue
        wins = float(rows["success"].cast(pl.Float64).sum())
        low, high = wilson(wins, rows.height)
        used = sum(_mean(rows, c) for c in tokens)
        values = (wins / rows.height, low, high, float(rows.height), _mean(rows, "steps"), used)
        for key, value in zip(keys, values, strict=True):
            out[key].append(value)
    return out


def _mean(rows: pl.DataFrame, column: str) -> float:
    value = rows[column].cast(pl.Float64).fill_null(0.0).mean()
    return float(value) if isinstance(value, int | float) else 0.0


def success_vs_budget(frame: pl.DataFrame, rate: float, release: str, out: Path) -> Path:
    """Success (with intervals and n), steps and tokens of every run against B. The B values
    are evenly spaced categories (labelled with their values), so that the series can stand
    side by side at each B without hiding each other's intervals."""
    part = frame.filter(pl.col("failure_rate") == rate)
    budgets = sorted(set(part["decoy_budget"].to_list()))
    runs = sorted(set(part["run"].to_list()))
    series = {run: _series(part.filter(pl.col("run") == run), budgets) for run in runs}
    token_runs = [run for run in runs if any(v > 0 for v in series[run]["tokens"] if v == v)]
    from matplotlib.ticker import PercentFormatter

    plt = pyplot()
    figure = plt.figure(figsize=bounded(max(8.0, 0.7 * len(budgets) + 4.0), 8.2))
    grid = figure.add_gridspec(2, 2 if token_runs else 1, height_ratios=(1.25, 1.0))
    lower = [figure.add_subplot(grid[1, k]) for k in range(2 if token_runs else 1)]
    axes = [[figure.add_subplot(grid[0, :]), *lower]]
    width = 0.6 / max(len(runs), 1)
    for k, run in enumerate(runs):
        style: dict[str, Any] = {
            "marker": MARKERS[k % len(MARKERS)],
            "linestyle": LINES[(k // len(MARKERS)) % len(LINES)],
        }
        x = [i + width * (k - (len(runs) - 1) / 2) for i in range(len(budgets))]
        s = series[run]
        counts = {int(n) for n in s["n"] if n == n}
        name = f"{label(run)} (n={counts.pop()} at each B)" if len(counts) == 1 else label(run)
        below = [
            max(0.0, v - lo) if v == v else float("nan") for v, lo in zip(s["success"], s["low"], strict=True)
        ]
        above = [
            max(0.0, hi - v) if v == v else float("nan")
            for v, hi in zip(s["success"], s["high"], strict=True)
        ]
        line = axes[0][0].errorbar(
            x,
            s["success"],
            yerr=[below, above],
            capsize=2.5,
            label=name,
            markersize=5,
            linewidth=1.3,
            **style,
        )
        color = line[0].get_color()
        varies = len({int(n) for n in s["n"] if n == n}) > 1
        if varies and len(budgets) <= MAX_TICKS:  # n varies with B: say it at each point
            for xi, yi, n in zip(x, s["success"], s["n"], strict=True):
                if yi == yi:
                    axes[0][0].annotate(
                        f"n={n:.0f}",
                        (xi, yi),
                        textcoords="offset points",
                        xytext=(3, 4),
                        fontsize=6.5,
                        color=color,
                    )
        axes[0][1].plot(x, s["steps"], color=color, markersize=5, **style)
        if run in token_runs:
            axes[0][2].plot(x, s["tokens"], color=color, markersize=5, **style)
    axes[0][0].set_ylim(-0.05, 1.08)
    axes[0][0].yaxis.set_major_formatter(PercentFormatter(1.0))
    axes[0][0].set_ylabel("success")
    titles = [
        "success (95% Wilson interval)",
        _scaled(axes[0][1], [series[r]["steps"] for r in runs], "tool calls"),
    ]
    if token_runs:
        titles.append(
            _scaled(axes[0][2], [series[r]["tokens"] for r in token_runs], "tokens (prompt + completion)")
        )
    for axis, title in zip(axes[0], titles, strict=True):
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("decoy budget B")
        shown = _ticks(len(budgets))
        axis.set_xticks(shown, [str(budgets[i]) for i in shown])
        axis.set_xlim(-0.6, len(budgets) - 0.4)
        axis.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    columns = min(len(runs), 3)
    figure.legend(
        handles,
        labels,
        loc="upper center",
        ncol=columns,
        fontsize=8,
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
    )
    figure.suptitle(f"{label(release)}: against the decoy budget B, tool failure rate {rate:g}", fontsize=11)
    figure.tight_layout()
    path = out / f"success_vs_B_p{rate:g}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def _scaled(axis: Any, values: list[list[float]], what: str) -> str:
    """A log axis when the values span more than a factor of 20, else a linear one from 0;
    the panel's title."""
    seen = [v for row in values for v in row if v == v and v > 0]
    if seen and max(seen) > 20 * min(seen):
        axis.set_yscale("log")
        return f"{what} per episode (mean, log scale)"
    axis.set_ylim(bottom=0, top=1.1 * max(seen, default=1.0))
    return f"{what} per episode (mean)"


def file_name(name: str) -> str:
    """``name`` with every character a file name should not hold replaced by ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in name)
