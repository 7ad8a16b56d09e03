"""Evaluation runs over a release (parallel, resumable) and the report built from them."""

from __future__ import annotations

import polars as pl
import pytest

from tests.helpers_release import build_small, compose_config


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build_small(tmp_path_factory.mktemp("eval"))


def _evaluate(release, runs, agent, *extra):
    from pipeline.evaluate import evaluate

    cfg = compose_config([f"release={release}", f"agent={agent}", f"output_root={runs}",
                          "workers=2", "failure_rates=[0.0,0.3]", *extra], "evaluate", "apps")
    assert evaluate(cfg) == 0
    return runs / release.name / agent


def test_evaluate_is_resumable_and_report_is_written(release, tmp_path, capsys):
    runs = tmp_path / "runs"
    out = _evaluate(release, runs, "search")
    first = pl.read_parquet(out / "results.parquet")
    assert first.height == 16 and first["success"].all()
    assert len(list((out / "transcripts").glob("*.json.gz"))) == 16
    capsys.readouterr()
    again = pl.read_parquet(_evaluate(release, runs, "search") / "results.parquet")
    assert "0 episodes run, 16 already done" in capsys.readouterr().out
    assert again.drop("wall_ms").equals(first.drop("wall_ms"))
    filtered = _evaluate(release, runs, "greedy_local", "domains=[toy]", "decoy_budgets=[3]")
    rows = pl.read_parquet(filtered / "results.parquet")
    assert set(rows["domain"]) == {"toy"} and set(rows["decoy_budget"]) == {3}
    from pipeline.runs import read_transcript

    trace = read_transcript(next((out / "transcripts").glob("*.json.gz")))["transcript"]
    assert trace[-1]["tool"] == "done" and trace[-1]["result"]["status"] == "ok"

    from pipeline.report import report

    cfg = compose_config([f"runs_root={runs / release.name}", f"output={tmp_path / 'report'}"],
                         "report", "apps")  # fmt: skip
    assert report(cfg) == 0
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "search success (unlimited budgets): 1.000" in summary
    assert len(list((tmp_path / "report").glob("heatmap_*.png"))) == 4
