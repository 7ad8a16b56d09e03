"""Evaluation runs over a release (parallel, resumable) and the report built from them."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.helpers_release import compose_config


@pytest.fixture(scope="session")
def release(small_release):
    return small_release


def _evaluate(release, runs, agent, *extra):
    from gridbench.commands.evaluate import evaluate

    cfg = compose_config(
        [
            f"release={release}",
            f"agent={agent}",
            f"output_root={runs}",
            "workers=2",
            "failure_rates=[0.0,0.3]",
            *extra,
        ],
        "evaluate",
        "apps",
    )
    assert evaluate(cfg) == 0
    return runs / release.name / agent


def test_evaluate_is_resumable_and_report_is_written(release, tmp_path, capsys, monkeypatch):
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
    from pipeline.evaluation.runs import read_transcript

    trace = read_transcript(next((out / "transcripts").glob("*.json.gz")))["transcript"]
    assert trace[-1]["tool"] == "done" and trace[-1]["result"]["status"] == "ok"

    from gridbench.commands.report import report

    cfg = compose_config(
        [f"runs_root={runs / release.name}", f"output={tmp_path / 'report'}"], "report", "apps"
    )
    assert report(cfg) == 0
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "- search success: 1.000 over 8 episodes" in summary
    assert "| search | 8 | 1.000 | [0.676, 1.000] |" in summary  # Wilson interval of 8/8
    assert "all runs" not in summary  # runs of different agents and task sets are never pooled
    # the diagnostics: search solves everything (no failure before or after knowing enough)
    # and leaves no violation; it reads one field per cell, enough to decide only the tasks
    # whose rules read that field alone
    assert "## How the episodes went" in summary
    assert re.search(r"\| search \| 8 \| [0-8]/8 \| 0/0 \| 0/0 \| ", summary)
    rows = first.filter(pl.col("failure_rate") == 0.0)
    assert rows["violations_at_end"].to_list() == [0] * 8 and rows["wrong_sets"].sum() > 0
    informed = rows.filter(pl.col("informed_step").is_not_null())
    assert (informed["informed_step"] <= informed["steps"]).all() and (rows["ideal_calls"] > 4).all()
    assert len(list((tmp_path / "report").glob("heatmap_*.png"))) == 2
    assert len(list((tmp_path / "report").glob("domains_p*.png"))) == 2
    assert len(list((tmp_path / "report").glob("success_vs_B_p*.png"))) == 2
    # without output=, the report goes below outputs/reports/<the runs' release name> of the
    # folder it runs in, whatever the default release is
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert report(compose_config([f"runs_root={runs / release.name}"], "report", "apps")) == 0
    assert (work / "outputs" / "reports" / release.name / "summary.md").is_file()


def test_report_groups_by_run_and_works_on_empty_partial_and_stale_runs(release, tmp_path, capsys):
    import json
    import os

    from pipeline.evaluation.runs import RunStore
    from pipeline.evaluation.summary import make_report

    runs = tmp_path / "runs"
    one = _evaluate(release, runs, "greedy_local", "domains=[toy]", "workers=1")
    _evaluate(release, runs, "greedy_local", "domains=[course]", "run_name=greedy-again", "workers=1")
    two = runs / release.name / "greedy-again"
    empty = runs / release.name / "nothing-yet"
    RunStore(empty).write_results()  # a run whose episodes all failed: every column, no row
    # a run killed before it rewrote its results: its episodes.jsonl is newer
    rows = (one / "episodes.jsonl").read_text().splitlines()
    (one / "episodes.jsonl").write_text("\n".join(rows[:-2]) + "\n")
    RunStore(one).write_results()
    (one / "episodes.jsonl").write_text("\n".join(rows) + "\n")
    stamp = (one / "results.parquet").stat().st_mtime
    os.utime(one / "episodes.jsonl", (stamp + 5, stamp + 5))
    failed = dict(json.loads(rows[0]), end_reason="api_error", api_error="503: overloaded")
    failed["episode_id"] = "0" * 16
    (two / "api_errors.jsonl").write_text(json.dumps(failed) + "\n")
    assert make_report([runs / release.name], tmp_path / "report") == 0
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "| greedy_local | 4 |" in summary and "| greedy-again | 4 |" in summary  # two runs, not one
    diagnostics = summary.split("## How the episodes went")[1].split("## Do the axes work?")[0]
    assert re.search(r"\| greedy_local \| 4 \| [0-4]/4 \| ", diagnostics)
    assert re.search(r"\| greedy-again \| 4 \| [0-4]/4 \| ", diagnostics)
    assert "nothing-yet" not in diagnostics  # the empty run has no episode to diagnose
    assert "Runs without a scored episode: nothing-yet" in summary
    assert "retries them): greedy-again @ small-v2.0.0: 1" in summary
    assert len(list((tmp_path / "report").glob("heatmap_*.png"))) == 2
    assert pl.read_parquet(one / "results.parquet").height == 8  # rewritten from episodes.jsonl
    only_empty = tmp_path / "only-empty"
    RunStore(only_empty / "r").write_results()
    assert make_report([only_empty], tmp_path / "report-empty") == 0
    text = (tmp_path / "report-empty" / "summary.md").read_text()
    assert "No scored episode yet" in text and "Do the axes work?" not in text
    assert "How the episodes went" not in text


def test_wilson_interval_matches_the_textbook_values():
    from pipeline.evaluation.summary import wilson

    low, high = wilson(8, 10)
    assert abs(low - 0.4902) < 1e-3 and abs(high - 0.9433) < 1e-3
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


@pytest.mark.parametrize(
    ("target", "label"),
    [
        ("tests.custom_agents.FirstCandidate", "FirstCandidate"),
        ("tests.custom_agents.AsyncDone", "AsyncDone"),
    ],
)
def test_a_custom_agent_runs_without_editing_the_source(release, tmp_path, target, label):
    from gridbench.commands.evaluate import evaluate

    cfg = compose_config(
        [
            f"release={release}",
            f"agent._target_={target}",
            f"output_root={tmp_path}",
            "agent.kwargs={note: hello}" if "First" in target else "trials=1",
        ],
        "evaluate",
        "apps",
    )
    assert evaluate(cfg) == 0
    rows = pl.read_parquet(tmp_path / release.name / label / "results.parquet")
    assert rows.height == 8 and (rows["end_reason"] == "done").all()
    assert (rows["calls_done"] == 1).all()


def test_results_are_current_after_ctrl_c_and_its_line_is_on_stderr(release, tmp_path, capsys):
    from gridbench.commands.evaluate import evaluate
    from tests.custom_agents import InterruptThird

    InterruptThird.played = 0
    cfg = compose_config(
        [
            f"release={release}",
            "agent._target_=tests.custom_agents.InterruptThird",
            f"output_root={tmp_path}",
            "agent.concurrency=1",
        ],
        "evaluate",
        "apps",
    )
    assert evaluate(cfg) == 130
    # its one line on stderr, as every command's (a signal sweep found it on stdout)
    printed = capsys.readouterr()
    assert "interrupted" not in printed.out, printed.out
    lines = [line for line in printed.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted (Ctrl-C); 2 episodes of this run saved in ")
    assert lines[0].endswith("run the same command again to resume"), lines
    rows = pl.read_parquet(tmp_path / release.name / "InterruptThird" / "results.parquet")
    assert rows.height == 2 and "episode_id" in rows.columns


def test_a_run_folder_refuses_a_command_of_another_configuration(release, tmp_path):
    from gridbench_core.errors import UserError

    toy = ("domains=[toy]", "workers=1")
    _evaluate(release, tmp_path, "greedy_local", *toy)
    with pytest.raises(
        UserError, match=r"holds a run with another configuration \(env.max_steps: 1000000 -> 50\)"
    ):
        _evaluate(release, tmp_path, "greedy_local", *toy, "env.max_steps=50")
    _evaluate(release, tmp_path, "greedy_local", *toy, "env.max_steps=50", "run_name=short")
    assert (tmp_path / release.name / "short" / "run.json").is_file()
    (tmp_path / release.name / "short" / "run.json").unlink()  # a folder written before run.json existed
    with pytest.raises(UserError, match="episodes of an older gridbench"):
        _evaluate(release, tmp_path, "greedy_local", *toy, "env.max_steps=50", "run_name=short")


def test_unknown_agents_and_empty_filters_are_clear_errors(release, tmp_path):
    from gridbench.commands.evaluate import evaluate

    for overrides, message in (
        (["agent._target_=no.such.Agent"], "cannot be imported"),
        (["agent=llm"], "agent.model"),
        (["domains=[meal]"], "matches no task"),
        (["shard=2/2"], "0 <= I < N"),
    ):
        cfg = compose_config(
            [f"release={release}", f"output_root={tmp_path}", *overrides], "evaluate", "apps"
        )
        with pytest.raises(ValueError, match=message):
            evaluate(cfg)


def test_swapped_answers_and_a_corrupt_results_file_are_clear_errors(release, tmp_path):
    import shutil

    from gridbench.commands.evaluate import evaluate
    from gridbench_core.errors import UserError
    from pipeline.evaluation.summary import make_report
    from tests.helpers_release import copy_release, redigest

    copy = copy_release(release, tmp_path / "swapped")
    answers = sorted((copy / "answers").rglob("*.json"))
    first, second = answers[0], answers[1]
    shutil.copy(first, tmp_path / "hold.json")
    shutil.copy(second, first)
    shutil.copy(tmp_path / "hold.json", second)
    cfg = compose_config([f"release={copy}", f"output_root={tmp_path}/runs", "workers=1"], "evaluate", "apps")
    swapped = f"({first.relative_to(copy)}|{second.relative_to(copy)})"
    with pytest.raises(UserError, match=f"{swapped}: its SHA-256 is not the one the manifest"):
        evaluate(cfg)  # the files changed after the build
    redigest(copy)  # and signed again: each file read is still its own task's
    with pytest.raises(UserError, match="its answer file is for task"):
        evaluate(cfg)
    run = tmp_path / "broken" / "x"
    run.mkdir(parents=True)
    (run / "results.parquet").write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(UserError, match="results.parquet cannot be read"):
        make_report([tmp_path / "broken"], tmp_path / "report")


def test_the_audit_says_what_it_is_doing(release, tmp_path, capsys):
    from gridbench.commands.audit import run_audit

    cfg = compose_config([f"release={release}", "splits=0", f"output={tmp_path}"], "audit", "apps")
    assert run_audit(cfg) == 0
    out = capsys.readouterr().out
    assert "audit small-v2.0.0: reading the decoy cells" in out and "audit small-v2.0.0: policies on" in out
    assert "audit small-v2.0.0: companion build of" in out  # the transfer classifiers' training build
    assert "audit small-v2.0.0: transfer classifiers" in out
    assert "audit small-v2.0.0: bounds: positions" in out  # where the truth sits in its bounds
    assert "audit small-v2.0.0: 4/4 stages" in out and (tmp_path / "audit.md").is_file(), out


def test_a_file_changed_after_the_build_is_refused_by_every_reader(release, tmp_path):
    """Hostile round 7: a truth swapped in an answer file (not re-signed) was scored by eval and
    audited as if it were the release. Every reader checks the manifest's digest."""
    import gridbench
    from pipeline.storage.read import release_pairs
    from pipeline.storage.safe import ReleaseError
    from tests.helpers_release import copy_release

    copy = copy_release(release, tmp_path / "edited")
    record = gridbench.load_release(copy)[0]
    answer_file = copy / "answers" / record.task_file[len("tasks/") :]
    answer_file.write_text(answer_file.read_text().replace('"truth"', '"truth" ', 1))
    fresh = gridbench.load_release(copy)[0]
    assert fresh.task["task_id"] == record.task_id  # the untouched task file still reads
    with pytest.raises(ReleaseError, match="its SHA-256 is not the one the manifest lists"):
        fresh.answer  # noqa: B018 (the property reads the file)
    with pytest.raises(ReleaseError, match=f"{answer_file.name}: its SHA-256"):
        release_pairs(copy)
    (copy / "metadata.parquet").write_bytes((copy / "metadata.parquet").read_bytes() + b"\n")
    with pytest.raises(ReleaseError, match="metadata.parquet: its SHA-256"):
        gridbench.load_release(copy)
