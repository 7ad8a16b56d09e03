"""The results table's columns: the one an older version named otherwise reads back under
its current name, from a run's rows and from its Parquet file alike."""

from __future__ import annotations

import json

import polars as pl

from pipeline.evaluation.runs import REQUIRED, RESULT_SCHEMA, RunStore, results_frame, row_problem


def _row(**changes):
    plain = {pl.String: "x", pl.Int64: 1, pl.Float64: 1.0, pl.Boolean: True}
    row = {name: plain[RESULT_SCHEMA[name]] for name in REQUIRED}
    # a row that can be: a failure rate in [0, 1) (1.0 is refused as impossible by a report)
    row.update({"episode_id": "0123456789abcdef", "domain": "toy", "task_id": "t", "failure_rate": 0.0})
    row.update(changes)
    return row


def test_tool_call_counts_is_the_column_older_runs_called_calls_json(tmp_path):
    counts = json.dumps({"query_toy_candidate_from_attribute": 3})
    old = _row(tool_call_counts=None)
    del old["tool_call_counts"]
    old["calls_json"] = counts
    assert row_problem(old) == "" and old["tool_call_counts"] == counts and "calls_json" not in old
    run = tmp_path / "runs" / "rel" / "old"
    run.mkdir(parents=True)
    (run / "episodes.jsonl").write_text(json.dumps(old) + "\n")
    frame = RunStore(run).write_results()
    assert frame["tool_call_counts"].to_list() == [counts] and "calls_json" not in frame.columns
    # an older results.parquet (its episodes.jsonl gone) is read with the current name too
    legacy = results_frame([old]).rename({"tool_call_counts": "calls_json"})
    (run / "episodes.jsonl").unlink()
    legacy.write_parquet(run / "results.parquet")
    from pipeline.evaluation.summary import load_runs

    loaded, _ = load_runs([tmp_path / "runs" / "rel"])
    assert loaded["tool_call_counts"].to_list() == [counts] and "calls_json" not in loaded.columns


def test_the_run_table_says_its_steps_and_tokens_are_means_per_episode():
    from pipeline.evaluation.summary import run_table

    frame = results_frame([_row(steps=10, failure_rate=0.0), _row(steps=20, failure_rate=0.0)])
    frame = frame.with_columns(pl.lit("r").alias("run"))
    table = run_table(frame, 0.0)
    assert "| mean steps | mean prompt tokens | mean completion tokens | mean wall s |" in table
    assert "| r | 2 | 1.000 |" in table and "| 15 |" in table
