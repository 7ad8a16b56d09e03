"""Reasoning depth of a release's tasks by decoy budget (``metadata.parquet``'s ``depth``), as
a Markdown table with Wilson intervals: for the dataset card and the report."""

from __future__ import annotations

import math

import polars as pl

from gridbench_core.stats import wilson
from solvers.ladder import FIXPOINT, RUNGS


def depth_table(meta: pl.DataFrame) -> str:
    """Markdown: per B, the tasks, the depth distribution and the share beyond the fixpoint
    with its interval."""
    lines = [
        "| B | tasks | " + " | ".join(RUNGS) + " | beyond fixpoint | 95% interval |",
        "|---|---|" + "---|" * len(RUNGS) + "---|---|",
    ]
    for budget in sorted(set(meta["decoy_budget"].to_list())):
        part = meta.filter(pl.col("decoy_budget") == budget)
        depths = [d for d in part["depth"].to_list() if d is not None]
        if not depths:
            continue
        counts = [sum(d == r for d in depths) for r in range(len(RUNGS))]
        beyond = sum(d > FIXPOINT for d in depths)
        low, high = wilson(beyond, len(depths))
        lines.append(
            f"| {budget} | {len(depths)} | "
            + " | ".join(str(c) for c in counts)
            + f" | {beyond / len(depths):.2f} | [{low:.2f}, {high:.2f}] |"
        )
    return "\n".join(lines)


def effort_table(meta: pl.DataFrame) -> str:
    """Markdown: per B, the finer measures (``metadata.parquet``'s ``search_nodes`` and
    ``joint_bits``): median and mean log2 of the search tree's nodes, tasks whose count hit
    its limit, and the mean bits left for reasoning across regions and rules."""
    lines = [
        "| B | tasks | median search nodes | mean log2 search nodes | capped | mean joint bits |",
        "|---|---|---|---|---|---|",
    ]
    for budget in sorted(set(meta["decoy_budget"].to_list())):
        part = meta.filter((pl.col("decoy_budget") == budget) & pl.col("search_nodes").is_not_null())
        if part.height == 0:
            continue
        nodes = sorted(part["search_nodes"].to_list())
        log2 = sum(math.log2(max(n, 1)) for n in nodes) / len(nodes)
        capped = int(part["search_capped"].fill_null(False).sum())
        bits = float(part["joint_bits"].mean())  # type: ignore[arg-type]
        lines.append(
            f"| {budget} | {part.height} | {nodes[len(nodes) // 2]} | {log2:.2f} | {capped} | {bits:.1f} |"
        )
    return "\n".join(lines)


__all__ = ["depth_table", "effort_table", "wilson"]
