"""Comparing the runs (models, baselines) of a release: figures and `summary.md`.

A run is a folder (``<runs_root>/<run>/``): two runs of the same model against different
servers, or with different ``run_name``, stay two runs. The shards of a run are merged, and
a folder whose ``episodes.jsonl`` is newer than its ``results.parquet`` (a run killed
outright) has its results rewritten first. Empty and partial runs are reported as they
are: a run's episodes that ended in ``api_error`` are counted apart, never scored.

Figures: see :mod:`pipeline.evaluation.figures`. `summary.md`: per failure rate a table of
runs with success and its 95% Wilson interval, steps, tokens and wall time (Table 2; no
row pools different runs), the checks that the axes work when the runs hold the baselines
they need, and -- given runs of releases built with different `min_resistant_share` --
success by that share.
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from core.errors import UserError, terminal_text
from pipeline.evaluation.figures import MAX_PANELS, domain_heatmap, heatmap, success_vs_budget, wilson
from pipeline.evaluation.runs import RENAMED, RunStore, results_frame, table_problem
from pipeline.storage.parquet import read_arrow_table
from pipeline.storage.safe import ReleaseError, read_bytes

__all__ = ["diagnostics_cells", "load_runs", "make_report", "run_table", "wilson"]


def _current(path: Path) -> None:
    """Rewrite ``results*.parquet`` from its ``episodes*.jsonl`` when the rows are newer (a
    run killed before it could write its results)."""
    suffix = path.name[len("results") : -len(".parquet")]
    episodes = path.with_name(f"episodes{suffix}.jsonl")
    if episodes.is_file() and (not path.is_file() or episodes.stat().st_mtime > path.stat().st_mtime):
        shard = None
        if suffix.startswith(".shard-"):
            index, _, count = suffix[len(".shard-") :].partition("-of-")
            shard = (int(index), int(count))
        RunStore(path.parent, shard).write_results()


def load_runs(roots: list[Path]) -> tuple[pl.DataFrame, dict[str, int]]:
    """Every run under the roots (one row per scored episode, with its ``run``), and per run
    the episodes that ended in ``api_error`` and are not scored."""
    for root in roots:
        for episodes in root.glob("*/episodes*.jsonl"):
            _current(
                episodes.with_name("results" + episodes.name[len("episodes") : -len(".jsonl")] + ".parquet")
            )
    files = sorted(f for root in roots for f in root.glob("*/results*.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no <run>/results.parquet under {', '.join(map(str, roots))}; run `make eval` first"
        )
    frames, unscored = [], {}
    for path in files:
        try:  # read as untrusted input: a regular file, bounded by what it decodes to
            table = read_arrow_table(read_bytes(path.parent, path.name), str(path))
            read = pl.from_arrow(table)
            if not isinstance(read, pl.DataFrame):
                raise TypeError("not a table")
            frame = read
        except ReleaseError as error:
            why = str(error).split(": ", 1)[-1]
            raise UserError(
                f"{terminal_text(path, 300)} cannot be read ({why}); delete it and rerun `make eval`"
            ) from None
        except Exception as error:  # polars raises several kinds for a damaged file
            raise UserError(
                f"{terminal_text(path, 300)} cannot be read ({type(error).__name__}); delete it and "
                "rerun `make eval` (finished episodes are kept in episodes.jsonl)"
            ) from None
        frame = frame.rename(
            {old: new for old, new in RENAMED.items() if old in frame.columns and new not in frame.columns}
        )
        problem = table_problem(frame)
        if problem:
            raise UserError(
                f"{terminal_text(path, 300)} is not a results table this code can report: {problem}; "
                "delete it and rerun `make eval` (finished episodes are kept in episodes.jsonl)"
            )
        # folder names, shown on the terminal and in the figures: escapes escaped
        release = terminal_text(path.parent.parent.name, 120)
        run = terminal_text(path.parent.name, 120)
        frame = frame.with_columns(pl.lit(run).alias("run"), pl.lit(release).alias("release"))
        frames.append(frame)
        failed = RunStore(path.parent).unanswered()
        unscored[f"{run} @ {release}"] = len(failed)
    frame = pl.concat(
        [results_frame([]).with_columns(pl.lit("").alias("run")), *frames], how="diagonal_relaxed"
    )
    frame = frame.unique(["release", "run", "episode_id"], keep="last", maintain_order=True)
    frame = frame.with_columns(pl.col("run").alias("run_in_release"))
    if frame["release"].n_unique() > 1:  # runs of several releases: name each by its release
        frame = frame.with_columns((pl.col("run") + " @ " + pl.col("release")).alias("run"))
    return frame, unscored


def run_table(frame: pl.DataFrame, rate: float) -> str:
    """Table 2: per run, success with its Wilson interval, steps, tokens, wall time. One row
    per run: runs of different agents or task sets are never pooled."""
    part = frame.filter(pl.col("failure_rate") == rate)
    lines = [
        "| run | episodes | success | 95% interval | mean steps | mean prompt tokens "
        "| mean completion tokens | mean wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in sorted(set(part["run"].to_list())):
        lines.append(_table_row(run, part.filter(pl.col("run") == run)))
    return "\n".join(lines)


def _table_row(name: str, rows: pl.DataFrame) -> str:
    n, wins = rows.height, float(rows["success"].cast(pl.Float64).sum())
    low, high = wilson(wins, n)

    def mean(column: str) -> str:
        value = rows[column].cast(pl.Float64).mean() if column in rows.columns else None
        return f"{value:.0f}" if isinstance(value, int | float) else "-"

    wall = rows["wall_ms"].cast(pl.Float64).mean()
    seconds = f"{wall / 1000:.2f}" if isinstance(wall, int | float) else "-"
    return (
        f"| {name} | {n} | {wins / max(n, 1):.3f} | [{low:.3f}, {high:.3f}] | "
        f"{mean('steps')} | {mean('prompt_tokens')} | {mean('completion_tokens')} | {seconds} |"
    )


DIAGNOSTICS_HEADER = (
    "| run | episodes | informed | failed, never informed | failed though informed | informed at turn "
    "| wasted calls | wrong sets | first wrong undone | violations in / out / left | queries left "
    "| checks left | steps / ideal |"
)


def diagnostics_table(frame: pl.DataFrame, rate: float) -> str:
    """Per run, how its episodes went (docs/evaluation.md, "Diagnostics"): the share that
    knew enough to decide, the failures before and after knowing enough, and the means of
    the other diagnostics ("-" for runs made before them)."""
    part = frame.filter(pl.col("failure_rate") == rate)
    lines = [DIAGNOSTICS_HEADER, "|" + "---|" * DIAGNOSTICS_HEADER.count(" | ") + "---|"]
    for run in sorted(set(part["run"].to_list())):
        rows = part.filter((pl.col("run") == run) & pl.col("depth_rung").is_not_null())
        lines.append("| " + " | ".join(diagnostics_cells(run, rows)) + " |")
    return "\n".join(lines)


def diagnostics_cells(name: str, rows: pl.DataFrame) -> list[str]:
    """The cells of one run's row of the diagnostics table (``rows``: its episodes that have
    diagnostics), in the order of :data:`DIAGNOSTICS_HEADER`."""
    n = rows.height
    if not n:
        return [name, "0"] + ["-"] * (DIAGNOSTICS_HEADER.count(" | ") - 1)
    informed = rows["informed_step"].is_not_null()
    failed = ~rows["success"].fill_null(False)
    undone = rows["first_wrong_undone"].drop_nulls()

    def mean(column: str, digits: int = 1) -> str:
        value = rows[column].cast(pl.Float64).mean()
        return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"

    ratio = (rows["steps"].cast(pl.Float64) / rows["ideal_calls"].cast(pl.Float64)).mean()
    cells = [
        name,
        str(n),
        f"{int(informed.sum())}/{n}",
        f"{int((failed & ~informed).sum())}/{int(failed.sum())}",
        f"{int((failed & informed).sum())}/{int(failed.sum())}",
        mean("informed_turn"),
        mean("wasted_calls"),
        mean("wrong_sets"),
        f"{int(undone.sum())}/{undone.len()}" if undone.len() else "-",
        f"{mean('violations_introduced')} / {mean('violations_repaired')} / {mean('violations_at_end')}",
        mean("queries_left"),
        mean("checks_left"),
        f"{ratio:.2f}" if isinstance(ratio, int | float) else "-",
    ]
    return cells


def evidence(frame: pl.DataFrame) -> list[str]:
    """The checks that B controls difficulty and H controls length, per failure rate and run
    of the baselines that show it (``greedy_local``, ``search``, the shortcuts)."""
    lines = []
    for rate in sorted(set(frame["failure_rate"].to_list())):
        part = frame.filter(pl.col("failure_rate") == rate)
        found = []
        for run in sorted(set(part.filter(pl.col("policy") == "greedy_local")["run"].to_list())):
            found.append(_greedy_line(run, part.filter(pl.col("run") == run)))
        for run in sorted(set(part.filter(pl.col("policy") == "search")["run"].to_list())):
            found += _search_lines(run, part.filter(pl.col("run") == run))
        shortcuts = part.filter(pl.col("policy").str.starts_with("shortcut"))
        for run in sorted(set(shortcuts["run"].to_list())):
            rows = shortcuts.filter(pl.col("run") == run)
            decoys = int(rows["decoy_cells"].sum())
            if decoys:
                hit = float(rows["decoy_cells_correct"].sum()) / float(decoys)
                chance = float(rows["decoy_cells_chance"].sum()) / float(decoys)
                found.append(
                    f"- {run}: truth picked on {hit:.3f} of {decoys} decoy cells (chance {chance:.3f})"
                )
        if found:
            lines += [f"\n### Tool failure rate {rate:g}\n", *found]
    return lines


def _greedy_line(run: str, rows: pl.DataFrame) -> str:
    by_b = rows.group_by("decoy_budget").agg(pl.col("success").cast(pl.Float64).mean()).sort("decoy_budget")
    if by_b.height < 2:
        return f"- {run}: one B only ({by_b['decoy_budget'][0]}); success falls with B cannot be checked"
    rho = rows.select(pl.corr("decoy_budget", pl.col("success").cast(pl.Float64), method="spearman")).item()
    listed = ", ".join(f"B={b}: {s:.2f}" for b, s in by_b.iter_rows())
    falls = rho is not None and rho == rho and rho < 0
    return (
        f"- {run} success by B: {listed} -> Spearman rho(B, success) = {rho:.2f}; falls with B: **{falls}**"
    )


def _search_lines(run: str, rows: pl.DataFrame) -> list[str]:
    by_h = rows.group_by("hidden_slots").agg(pl.col("steps").mean()).sort("hidden_slots")
    steps = by_h["steps"].to_list()
    grows = len(steps) > 1 and all(a < b for a, b in zip(steps, steps[1:], strict=False))
    listed = ", ".join(f"H={h}: {s:.0f}" for h, s in by_h.iter_rows())
    solved = float(rows["success"].cast(pl.Float64).sum()) / rows.height
    return [
        f"- {run} steps by H: {listed} -> grow with H: **{grows}**",
        f"- {run} success: {solved:.3f} over {rows.height} episodes",
    ]


def by_resistance(frame: pl.DataFrame) -> list[str]:
    """Success per run and `min_resistant_share` of the release (several releases given)."""
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
        "| run | failure rate | min_resistant_share | episodes | success | mean steps |",
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
    frame, unscored = load_runs(roots)
    out.mkdir(parents=True, exist_ok=True)
    release = ", ".join(sorted(set(frame["release"].to_list()))) or ", ".join(r.name for r in roots)
    rates = sorted(set(frame["failure_rate"].to_list()))
    runs = sorted(set(frame["run"].to_list()))
    images = [heatmap(frame, run, release, out) for run in runs]
    drawn = rates[:MAX_PANELS]  # the figures of a few rates; the tables below have them all
    images += [domain_heatmap(frame, rate, release, out) for rate in drawn]
    images += [success_vs_budget(frame, rate, release, out) for rate in drawn]
    text = [
        "# Evaluation report",
        "",
        f"Release: {release}; runs: {len(unscored)}; scored episodes: {frame.height}.",
        "",
    ]
    waiting = {run: n for run, n in sorted(unscored.items()) if n}
    if waiting:
        text += [
            "Not scored yet (ended in `api_error`; the same `make eval` command retries them): "
            + ", ".join(f"{run}: {n}" for run, n in waiting.items()),
            "",
        ]
    scored = set(frame["run_in_release"].to_list())
    empty = sorted(run for run in unscored if run.split(" @ ")[0] not in scored)
    if empty:
        text += [f"Runs without a scored episode: {', '.join(empty)}.", ""]
    if not frame.height:
        text += ["No scored episode yet: nothing to compare.", ""]
    for rate in rates:
        text += [f"## Runs at tool failure rate {rate:g}", "", run_table(frame, rate), ""]
    if frame.height:
        text += [
            "## How the episodes went",
            "",
            "Per episode, from its calls and the task's answer (docs/evaluation.md, *Diagnostics*): "
            "*informed*, the episodes whose facts came to decide the task at its rung of the ladder; "
            "the failures before and after that point; the turn it came at, wasted calls, wrong "
            "set_slot calls and the share of first wrong moves undone, violations introduced, "
            "repaired and left, budgets left (- when unlimited), and the calls against the ideal "
            "agent's, as means per episode. Runs made before the diagnostics count 0 episodes here.",
            "",
        ]
        for rate in rates:
            text += [f"### Tool failure rate {rate:g}", "", diagnostics_table(frame, rate), ""]
    checks = evidence(frame)
    if checks:
        text += ["## Do the axes work?", *checks, ""]
    text += by_resistance(frame)
    if images:
        text += ["", "## Figures", "", *(f"![{p.stem}]({p.name})" for p in images)]
        if len(rates) > len(drawn):
            text += ["", f"(Figures of the first {len(drawn)} of the {len(rates)} failure rates.)"]
    (out / "summary.md").write_text("\n".join(text) + "\n")
    print(f"report -> {out / 'summary.md'} ({len(images)} figures, {time.perf_counter() - start:.1f}s)")
    for rate in rates:
        print(f"\nfailure rate {rate:g}\n{run_table(frame, rate)}")
    if not frame.height:
        print("no scored episode yet" + (f"; not scored: {waiting}" if waiting else ""))
    return 0
