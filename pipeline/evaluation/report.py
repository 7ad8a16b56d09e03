"""Comparing the runs (models, baselines) of a release: figures and `summary.md`.

Figures (PNG, one title each naming model, release and failure rate):
- `heatmap_<run>.png`: success over H x B, one panel per failure rate side by side (the
  paper's Figure 9);
- `domains_p<rate>.png`: success per domain x run (Figure 2);
- `success_vs_B_p<rate>.png`: success against the decoy budget, one line per run.
`summary.md`: a table per failure rate with success and its 95% Wilson interval, steps,
tokens and wall time per run (Table 2), the checks that the axes work, and -- when runs of
releases built with different `min_resistant_share` are given -- success by that share.
`runs_root` may list several folders (one per release); shards of a run are merged.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import matplotlib

from gridbench.errors import UserError
from pipeline.storage.parquet import read_arrow_table
from pipeline.storage.safe import ReleaseError, read_bytes

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

Z = 1.959964  # 95%


def load_runs(roots: list[Path]) -> pl.DataFrame:
    """Every `<run>/results*.parquet` under the roots; shards merged, duplicates dropped."""
    files = sorted(f for root in roots for f in root.glob("*/results*.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no <run>/results.parquet under {', '.join(map(str, roots))}; run `make eval` first"
        )
    frames = []
    for path in files:
        try:  # read as untrusted input: a regular file, bounded by what it decodes to
            table = read_arrow_table(read_bytes(path.parent, path.name), str(path))
            frame = pl.from_arrow(table)
            if not isinstance(frame, pl.DataFrame):
                raise TypeError("not a table")
            frames.append(frame)
        except ReleaseError as error:
            why = str(error).split(": ", 1)[-1]
            raise UserError(f"{path} cannot be read ({why}); delete it and rerun `make eval`") from None
        except Exception as error:  # polars raises several kinds for a damaged file
            raise UserError(
                f"{path} cannot be read ({type(error).__name__}); delete it and "
                "rerun `make eval` (finished episodes are kept in episodes.jsonl)"
            ) from None
    frame = pl.concat([f for f in frames if f.height], how="diagonal_relaxed")
    if "release" not in frame.columns:
        frame = frame.with_columns(pl.lit(roots[0].name).alias("release"))
    frame = frame.unique(["release", "episode_id"], keep="last", maintain_order=True)
    frame = frame.with_columns(pl.col("agent").alias("run_in_release"))
    if frame["release"].n_unique() > 1:  # runs of several releases: name each by its release
        frame = frame.with_columns((pl.col("agent") + " @ " + pl.col("release")).alias("agent"))
    return frame


def wilson(successes: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _grid(part: pl.DataFrame, rows: str, cols: str) -> tuple[list, list, list[list[float]]]:
    means = part.group_by([rows, cols]).agg(pl.col("success").cast(pl.Float64).mean())
    row_keys = sorted(set(part[rows].to_list()))
    col_keys = sorted(set(part[cols].to_list()))
    value = {(r[rows], r[cols]): r["success"] for r in means.iter_rows(named=True)}
    return row_keys, col_keys, [[value.get((r, c), float("nan")) for c in col_keys] for r in row_keys]


def _panel(axis, rows: list, cols: list, grid: list[list[float]], xlabel: str, ylabel: str):  # type: ignore[no-untyped-def]
    image = axis.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
    axis.set_xticks(range(len(cols)), [str(c) for c in cols], fontsize=9)
    axis.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=9)
    axis.set_xlabel(xlabel, fontsize=10)
    axis.set_ylabel(ylabel, fontsize=10)
    size = 9 if len(cols) <= 7 else 8 if len(cols) <= 10 else 6
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:  # not NaN
                axis.text(
                    j,
                    i,
                    f"{value:.0%}",
                    ha="center",
                    va="center",
                    fontsize=size,
                    color="white" if value < 0.55 else "black",
                )
    return image


def heatmap(frame: pl.DataFrame, run: str, release: str, out: Path) -> Path:
    """Success over H x B for one run, one panel per failure rate."""
    part = frame.filter(pl.col("agent") == run)
    rates = sorted(set(part["failure_rate"].to_list()))
    figure, axes = plt.subplots(1, len(rates), figsize=(4.6 * len(rates) + 0.8, 4.2), squeeze=False)
    image = None
    for axis, rate in zip(axes[0], rates, strict=True):
        rows, cols, grid = _grid(part.filter(pl.col("failure_rate") == rate), "hidden_slots", "decoy_budget")
        image = _panel(axis, rows, cols, grid, "decoy budget B", "hidden slots H")
        axis.set_title(f"tool failure rate {rate:g}", fontsize=11)
    figure.colorbar(image, ax=axes[0].tolist(), shrink=0.85, label="success")  # type: ignore[arg-type]
    figure.suptitle(f"{run} on {release}: success over H x B", fontsize=12)
    path = out / f"heatmap_{_file(run)}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def domain_heatmap(frame: pl.DataFrame, rate: float, release: str, out: Path) -> Path:
    """Success per run and domain at failure rate ``rate``, saved as a PNG in ``out``; its path."""
    part = frame.filter(pl.col("failure_rate") == rate)
    runs, domains, grid = _grid(part, "agent", "domain")
    figure, axis = plt.subplots(figsize=(1.3 * len(domains) + 3.5, 0.55 * len(runs) + 1.8))
    image = _panel(axis, runs, domains, grid, "domain", "")
    figure.colorbar(image, ax=axis, shrink=0.85, label="success")
    axis.set_title(f"{release}: success per domain, tool failure rate {rate:g}", fontsize=11)
    path = out / f"domains_p{rate:g}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def success_vs_budget(frame: pl.DataFrame, rate: float, release: str, out: Path) -> Path:
    """Success of every run against decoy budget B at failure rate ``rate``, saved as a PNG; its path."""
    part = frame.filter(pl.col("failure_rate") == rate)
    figure, axis = plt.subplots(figsize=(7, 4.2))
    for run in sorted(set(part["agent"].to_list())):
        line = (
            part.filter(pl.col("agent") == run)
            .group_by("decoy_budget")
            .agg(pl.col("success").cast(pl.Float64).mean())
            .sort("decoy_budget")
        )
        axis.plot(line["decoy_budget"], line["success"], marker="o", label=run)
    axis.set_ylim(-0.03, 1.03)
    axis.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    axis.set_xlabel("decoy budget B")
    axis.set_ylabel("success")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, loc="best")
    axis.set_title(f"{release}: success against B, tool failure rate {rate:g}", fontsize=11)
    path = out / f"success_vs_B_p{rate:g}.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def _file(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in name)


def run_table(frame: pl.DataFrame, rate: float) -> str:
    """Table 2: per run, success with its Wilson interval, steps, tokens, wall time."""
    part = frame.filter(pl.col("failure_rate") == rate)
    lines = [
        "| run | episodes | success | 95% interval | steps | prompt tokens | completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    overall = []
    for run in sorted(set(part["agent"].to_list())):
        rows = part.filter(pl.col("agent") == run)
        overall.append(_table_row(run, rows))
    lines += overall
    lines.append(_table_row("**all runs**", part, tokens=part["agent"].n_unique() == 1))
    return "\n".join(lines)


def _table_row(name: str, rows: pl.DataFrame, tokens: bool = True) -> str:
    n, wins = rows.height, float(rows["success"].cast(pl.Float64).sum())
    low, high = wilson(wins, n)

    def mean(column: str) -> float:
        value = rows[column].cast(pl.Float64).mean() if column in rows.columns else None
        return float(value) if isinstance(value, int | float) else 0.0

    used = f"{mean('prompt_tokens'):.0f} | {mean('completion_tokens'):.0f}" if tokens else "- | -"
    return (
        f"| {name} | {n} | {wins / max(n, 1):.3f} | [{low:.3f}, {high:.3f}] | "
        f"{mean('steps'):.0f} | {used} | {mean('wall_ms') / 1000:.2f} |"
    )


def evidence(frame: pl.DataFrame) -> list[str]:
    """The checks that B controls difficulty and H controls length, per failure rate."""
    lines = []
    for rate in sorted(set(frame["failure_rate"].to_list())):
        part = frame.filter(pl.col("failure_rate") == rate)
        lines.append(f"\n### Tool failure rate {rate}\n")
        greedy = part.filter(pl.col("agent") == "greedy_local")
        if greedy.height:
            by_b = greedy.group_by("decoy_budget").agg(pl.col("success").mean()).sort("decoy_budget")
            rho = greedy.select(
                pl.corr("decoy_budget", pl.col("success").cast(pl.Float64), method="spearman")
            ).item()
            lines.append(
                "- greedy_local success by B: "
                + ", ".join(f"B={b}: {s:.2f}" for b, s in by_b.iter_rows())
                + f" -> Spearman rho(B, success) = {rho:.2f}; falls with B: **{rho < 0}**"
            )
        search = part.filter(pl.col("agent") == "search")
        if search.height:
            by_h = search.group_by("hidden_slots").agg(pl.col("steps").mean()).sort("hidden_slots")
            steps = by_h["steps"].to_list()
            grows = all(a < b for a, b in zip(steps, steps[1:], strict=False))
            lines.append(
                "- search steps by H: "
                + ", ".join(f"H={h}: {s:.0f}" for h, s in by_h.iter_rows())
                + f" -> grow with H: **{grows}**"
            )
            rate_solved = search["success"].cast(pl.Float64).sum() / search.height
            lines.append(
                f"- search success (unlimited budgets): {rate_solved:.3f} over {search.height} episodes"
            )
        for agent in sorted(a for a in set(part["agent"].to_list()) if a.startswith("shortcut")):
            rows = part.filter(pl.col("agent") == agent)
            cells = int(rows["decoy_cells"].sum())
            if cells:
                hit = float(rows["decoy_cells_correct"].sum()) / float(cells)
                chance = float(rows["decoy_cells_chance"].sum()) / float(cells)
                lines.append(
                    f"- {agent}: truth picked on {hit:.3f} of {cells} decoy cells (chance {chance:.3f})"
                )
    return lines


def by_resistance(frame: pl.DataFrame) -> list[str]:
    """Success per policy and `min_resistant_share` of the release (several releases given)."""
    if "min_resistant_share" not in frame.columns or frame["min_resistant_share"].n_unique() < 2:
        return []
    keys = ["run_in_release", "failure_rate", "min_resistant_share"]
    table = (
        frame.group_by(keys)
        .agg(pl.col("success").cast(pl.Float64).mean(), pl.col("steps").mean(), pl.len())
        .sort(keys)
    )
    lines = [
        "",
        "## Success by the release's min_resistant_share",
        "",
        "| run | failure rate | min_resistant_share | episodes | success | steps |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['run_in_release']} | {r['failure_rate']:g} | {r['min_resistant_share']} | "
        f"{r['len']} | {r['success']:.3f} | {r['steps']:.0f} |"
        for r in table.iter_rows(named=True)
    ]
    return lines


def make_report(roots: list[Path], out: Path) -> int:
    """Figures and summary.md of every run under ``roots`` into ``out``."""
    start = time.perf_counter()
    frame = load_runs(roots)
    out.mkdir(parents=True, exist_ok=True)
    release = ", ".join(sorted(set(frame["release"].to_list())))
    rates = sorted(set(frame["failure_rate"].to_list()))
    images = [heatmap(frame, run, release, out) for run in sorted(set(frame["agent"].to_list()))]
    images += [domain_heatmap(frame, rate, release, out) for rate in rates]
    images += [success_vs_budget(frame, rate, release, out) for rate in rates]
    text = [
        "# Evaluation report",
        "",
        f"Release: {release}; runs: {frame['agent'].n_unique()} ({frame.height} episodes).",
        "",
    ]
    for rate in rates:
        text += [f"## Runs at tool failure rate {rate:g}", "", run_table(frame, rate), ""]
    text += ["## Do the axes work?", *evidence(frame), *by_resistance(frame), "", "## Figures", ""]
    text += [f"![{p.stem}]({p.name})" for p in images]
    (out / "summary.md").write_text("\n".join(text) + "\n")
    print(f"report -> {out / 'summary.md'} ({len(images)} figures, {time.perf_counter() - start:.1f}s)")
    for rate in rates:
        print(f"\nfailure rate {rate:g}\n{run_table(frame, rate)}")
    return 0
