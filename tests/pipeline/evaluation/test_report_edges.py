"""`make report` against results tables it did not write (hostile round 4): a wrong type, a
missing column, an impossible count is one line naming the file and the fault; what a figure
costs is bounded by what it draws, not by how many distinct H and B a table holds; and names
from the table or the folders reach the terminal and the figures' warnings escaped."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest

from gridbench_core.errors import UserError
from pipeline.evaluation.summary import make_report


@pytest.fixture(scope="module")
def good(tiny_release, tmp_path_factory) -> pl.DataFrame:
    """The results table of a real run (search over the tiny release)."""
    from gridbench.commands.evaluate import evaluate
    from tests.helpers_release import compose_config

    out = tmp_path_factory.mktemp("runs")
    cfg = compose_config([f"release={tiny_release}", f"output_root={out}", "workers=1"], "evaluate", "apps")
    assert evaluate(cfg) == 0
    return pl.read_parquet(next(out.rglob("results.parquet")))


def _report(frame: pl.DataFrame, root: Path, run: str = "search") -> Path:
    (root / run).mkdir(parents=True)
    frame.write_parquet(root / run / "results.parquet")
    make_report([root], root.parent / "report")
    return root.parent / "report"


BROKEN = {
    "success as text": (lambda f: f.with_columns(pl.col("success").cast(pl.String)), "'success' is String"),
    "failure rate as text": (
        lambda f: f.with_columns(pl.col("failure_rate").cast(pl.String)),
        "'failure_rate' is String",
    ),
    "H as text": (
        lambda f: f.with_columns(pl.col("hidden_slots").cast(pl.String)),
        "'hidden_slots' is String",
    ),
    "a struct for a number": (lambda f: f.with_columns(pl.struct(["steps"]).alias("wall_ms")), "'wall_ms'"),
    "no success": (lambda f: f.drop("success"), "no column 'success'"),
    "no H": (lambda f: f.drop("hidden_slots"), "no column 'hidden_slots'"),
    "no columns of ours": (lambda f: f.select("episode_id"), "no column"),
    "empty success": (lambda f: f.with_columns(pl.lit(None, pl.Boolean).alias("success")), "empty values"),
    "negative steps": (lambda f: f.with_columns(pl.lit(-5).alias("steps")), "steps < 0"),
    "negative tokens": (lambda f: f.with_columns(pl.lit(-1).alias("prompt_tokens")), "prompt_tokens < 0"),
    "H = 0": (lambda f: f.with_columns(pl.lit(0).alias("hidden_slots")), "hidden_slots outside"),
    "H = 10**6": (lambda f: f.with_columns(pl.lit(10**6).alias("hidden_slots")), "hidden_slots outside"),
    "B < 0": (lambda f: f.with_columns(pl.lit(-3).alias("decoy_budget")), "decoy_budget < 0"),
    "rate 1.5": (lambda f: f.with_columns(pl.lit(1.5).alias("failure_rate")), "failure_rate outside"),
    "rate NaN": (lambda f: f.with_columns(pl.lit(float("nan")).alias("failure_rate")), "failure_rate not"),
    "fraction 2": (lambda f: f.with_columns(pl.lit(2.0).alias("fraction_correct")), "fraction_correct above"),
    "more correct decoy cells than cells": (
        lambda f: f.with_columns((pl.col("decoy_cells") + 1).alias("decoy_cells_correct")),
        "decoy_cells_correct above decoy_cells",
    ),
    "success with a wrong cell": (
        lambda f: f.with_columns(pl.lit(True).alias("success"), pl.lit(0.5).alias("fraction_correct")),
        "success without every hidden cell right",
    ),
    "every cell right, no success": (
        lambda f: f.with_columns(pl.lit(False).alias("success"), pl.lit(1.0).alias("fraction_correct")),
        "without success",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_table_that_cannot_be_reported_is_one_line(name, good, tmp_path):
    edit, said = BROKEN[name]
    with pytest.raises(UserError) as refused:
        _report(edit(good), tmp_path / "runs")
    message = str(refused.value)
    assert said in message and "results.parquet" in message and "\n" not in message, message
    assert not (tmp_path / "report").exists()


def test_the_good_table_is_reported(good, tmp_path):
    out = _report(good, tmp_path / "runs")
    assert (out / "summary.md").is_file() and (out / "heatmap_search.png").is_file()


def test_many_distinct_h_and_b_draw_a_bounded_figure(good, tmp_path, monkeypatch):
    """60 H x 60 B (3,600 cells, 60 with data): the figure keeps a bounded size and writes
    no word per cell (it wrote 3,600 "no data" and more: 600 x 600 took more than 4 GB)."""
    from pipeline.evaluation import figures

    plt = figures.pyplot()

    n = 60
    wide = pl.concat([good.head(1)] * n).with_columns(
        pl.Series("hidden_slots", list(range(1, n + 1))),
        pl.Series("decoy_budget", list(range(0, 2 * n, 2))),
        pl.Series("episode_id", [f"{i:016x}" for i in range(n)]),
    )
    drawn = []
    close = plt.close

    def spy(figure=None):
        if figure is not None and hasattr(figure, "get_size_inches"):
            texts = sum(len(axis.texts) for axis in figure.axes)
            ticks = max((len(axis.get_xticklabels()) for axis in figure.axes), default=0)
            drawn.append((tuple(figure.get_size_inches()), texts, ticks))
        return close(figure)

    monkeypatch.setattr(plt, "close", spy)
    _report(wide, tmp_path / "runs")
    assert drawn
    for size, texts, ticks in drawn:
        assert max(size) <= figures.MAX_INCHES and texts <= 2 * figures.MAX_LABELLED and ticks <= 61


@pytest.mark.slow  # a subprocess under a memory limit, 600 x 600 cells
def test_six_hundred_distinct_h_and_b_stay_within_memory(good, tmp_path):
    from tests.hostile import peak_mb, run_limited

    n = 600
    wide = pl.concat([good.head(1)] * n).with_columns(
        pl.Series("hidden_slots", list(range(1, n + 1))),
        pl.Series("decoy_budget", list(range(0, 3 * n, 3))),
        pl.Series("episode_id", [f"{i:016x}" for i in range(n)]),
    )
    (tmp_path / "runs" / "search").mkdir(parents=True)
    wide.write_parquet(tmp_path / "runs" / "search" / "results.parquet")
    done = run_limited(
        "gridbench.commands.report",
        [f"runs_root={tmp_path}/runs", f"output={tmp_path}/report"],
        limit_mb=3000,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert peak_mb(done.stderr) < 1500


def test_names_with_escapes_reach_neither_the_terminal_nor_a_warning_raw(good, tmp_path, capsys):
    forged = good.with_columns(pl.lit("\x1b[31mevil\x1b]0;title\x07").alias("domain"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _report(forged, tmp_path / "runs", run="run\x1b[2Jname")
    shown = capsys.readouterr()
    texts = [str(w.message) for w in caught] + [shown.out, shown.err]
    assert not any("\x1b" in text or "\x07" in text for text in texts), [t for t in texts if "\x1b" in t]
    assert "run\\x1b[2Jname" in shown.out  # the run is named, escaped


def test_the_evidence_lines_say_grow_and_fall_only_when_they_strictly_do():
    """Steps that stay flat from one H to the next do not "grow with H"; steps that rise at
    every H do; success that falls with B gives a negative rho and says so."""
    from pipeline.evaluation.summary import _greedy_line, _search_lines

    flat = pl.DataFrame({"hidden_slots": [5, 5, 7, 7], "steps": [10, 10, 10, 10], "success": [True] * 4})
    assert "grow with H: **False**" in _search_lines("search", flat)[0]
    rising = flat.with_columns(pl.Series("steps", [10, 12, 20, 22]))
    assert "H=5: 11, H=7: 21 -> grow with H: **True**" in _search_lines("search", rising)[0]
    falling = pl.DataFrame({"decoy_budget": [0, 0, 4, 4], "success": [True, True, True, False]})
    assert "falls with B: **True**" in _greedy_line("greedy_local", falling)
