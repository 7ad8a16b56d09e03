"""The Inspect AI task, played offline by Inspect's mockllm with scripted tool calls."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import gridbench
from gridbench.adapters.core import Session
from gridbench.env import openai_schemas
from gridbench_core.errors import UserError
from tests.adapters.helpers import inspect_policy, solving_moves

# Inspect AI takes seconds to import: these import it on first call, in the worker that runs
# this module's tests, not in every worker that collects it


def _on_first_call(module: str, name: str):  # type: ignore[no-untyped-def]
    """``module.name``, imported when the returned function is first called."""

    def call(*args, **kwargs):  # type: ignore[no-untyped-def]
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


inspect_eval = _on_first_call("inspect_ai", "eval")
read_eval_log = _on_first_call("inspect_ai.log", "read_eval_log")
get_model = _on_first_call("inspect_ai.model", "get_model")
json_schema_dump = _on_first_call("inspect_ai.util._json", "json_schema_dump")
gridbench_task = _on_first_call("gridbench.adapters.inspect_task", "gridbench")
tool_defs = _on_first_call("gridbench.adapters.inspect_task", "tool_defs")


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def run(release: Path, moves: dict, log_dir: Path, **task_args):
    eval_args = task_args.pop("eval_args", {})
    logs = inspect_eval(
        "gridbench/gridbench",
        model=get_model("mockllm/model", custom_outputs=inspect_policy(moves)),
        task_args={"release": str(release), **task_args},
        log_dir=str(log_dir),
        display="none",
        **eval_args,
    )
    assert logs[0].status == "success", logs[0].error
    return read_eval_log(logs[0].location)


def test_a_scripted_solve_scores_1_and_a_wrong_grid_0_and_the_log_reads_back(release, tmp_path):
    records = gridbench.load_release(release).filter(domains=["course"], hidden_slots=[4])
    solve, spoil = records[0], records[1]
    wrong = solving_moves(spoil)
    # the first move puts a wrong candidate in its cell
    (name, args) = wrong[0]
    task = spoil.task
    cell = next(s for s in task["slots"] if (s["row"], s["col"]) == (args["row"], args["col"]))
    args = {**args, "id": next(c for c in cell["candidates"] if c != args["id"])}
    moves = {solve.task_id: solving_moves(solve), spoil.task_id: [(name, args)] + wrong[1:]}
    log = run(release, moves, tmp_path, task_ids=[solve.task_id, spoil.task_id])
    scores = {s.id: s.scores["grid_score"] for s in log.samples}
    assert scores[solve.task_id].value == "C" and scores[solve.task_id].metadata["fraction_correct"] == 1.0
    assert scores[spoil.task_id].value == "I" and scores[spoil.task_id].metadata["fraction_correct"] == 0.75
    assert scores[spoil.task_id].metadata["wrong_cells"] == [[args["row"], args["col"]]]
    metrics = log.results.scores[0].metrics
    assert metrics["accuracy"].value == 0.5 and "stderr" in metrics


def test_filters_select_the_samples_and_epochs_are_trials_with_their_own_seeds(release, tmp_path):
    held = gridbench.load_release(release).filter(domains=["toy"], decoy_budgets=[3])
    moves = {r.task_id: [("get_current_grid_state", {})] * 6 for r in held}
    log = run(
        release,
        moves,
        tmp_path,
        domains="toy",
        decoy_budgets="3",
        failure_rate=0.5,
        eval_args={"epochs": 2},
    )
    assert held and sorted({s.id for s in log.samples}) == sorted(r.task_id for r in held)
    assert sorted(s.epoch for s in log.samples) == sorted([1, 2] * len(held))
    # a failure rate of 0.5 over 6 calls: the trials of a task draw different failures
    for record in held:
        trials = [
            tuple(m.text for m in s.messages if m.role == "tool")
            for s in log.samples
            if s.id == record.task_id
        ]
        assert len(trials) == 2 and trials[0] != trials[1]


def test_tools_are_the_episode_tools_with_the_same_schemas(release):
    record = gridbench.load_release(release)[0]
    defs = tool_defs(Session(record.task, record.answer))
    ours = {s["function"]["name"]: s["function"] for s in openai_schemas(record.domain)}
    assert [d.name for d in defs] == list(ours)
    for d in defs:
        assert d.description == ours[d.name]["description"]
        assert json_schema_dump(d.parameters) == ours[d.name]["parameters"]


@pytest.mark.parametrize(
    "args, needle",
    [
        ({"release": "/no/such/release"}, "not a release"),
        ({"domains": "chess"}, "no task"),
        ({"hidden_slots": "four"}, "hidden_slots"),
        ({"failure_rate": 1.5}, "failure_rate"),
        ({"query_budget": "lots"}, "query_budget"),
        ({"max_turns": "many"}, "max_turns"),
        ({"max_reminders": -1}, "max_reminders"),
        ({"failure_rat": 0.1}, "-T failure_rat: unknown task argument"),
    ],
)
def test_bad_task_arguments_stop_before_any_model_call(release, args, needle):
    with pytest.raises(UserError, match=needle) as caught:
        gridbench_task(**{"release": str(release), **args})
    assert caught.value.message.startswith("error: ") and "\n" not in caught.value.message


def test_the_release_defaults_to_the_default_release(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="gridbench-v2.0.0: not a release.*make release"):
        gridbench_task()
    target = tmp_path / "outputs" / "releases"
    target.mkdir(parents=True)
    (target / "gridbench-v2.0.0").symlink_to(release)
    assert len(gridbench_task().dataset) == 8


@pytest.mark.slow
def test_the_inspect_cli_finds_the_task_through_the_entry_point(tmp_path):
    """`inspect eval gridbench/gridbench` finds the task and runs its argument checks (an
    offline mockllm call would need tiktoken's download, so the release is missing on purpose)."""
    import subprocess
    import sys

    from tests import ROOT

    inspect_cli = Path(sys.executable).parent / "inspect"
    out = subprocess.run(
        [
            str(inspect_cli),
            "eval",
            "gridbench/gridbench",
            "--model",
            "mockllm/model",
            "-T",
            f"release={tmp_path}/missing",
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "not a release" in out.stdout + out.stderr
    assert "No inspect tasks were found" not in out.stdout + out.stderr


def test_calls_that_break_the_schema_reach_the_episode_and_end_it_at_the_step_limit(release, tmp_path):
    record = gridbench.load_release(release)[0]
    bad = [("set_slot", {"row": "abc", "col": 0, "id": None}), ("no_such_tool", {})] * 150
    log = run(release, {record.task_id: bad}, tmp_path, task_ids=record.task_id, max_steps=10)
    (sample,) = log.samples
    score = sample.scores["grid_score"].metadata
    assert score["truncated"] and score["steps"] == 11 and score["invalid_calls"] == 11
    assert score["malformed_tool_calls"] == 5 and score["end_reason"] == "max_steps"  # the unknown tools
    tool_texts = [m.text for m in sample.messages if m.role == "tool"]
    assert "'row' must be an integer" in tool_texts[0] and "unknown tool" in tool_texts[1]
    assert sample.scores["grid_score"].value == "I"


def test_partial_must_be_a_boolean(release):
    with pytest.raises(UserError, match="partial"):
        gridbench_task(release=str(release), partial="maybe")


def _first(release: Path, folder: str) -> Path:
    return sorted((release / folder).rglob("*.json"))[0]


DAMAGED = {
    "a task that is not JSON": lambda r: _first(r, "tasks").write_text("{not json"),
    "a task of another shape": lambda r: _first(r, "tasks").write_text('{"task_id": "x"}'),
    "a task nested too deep": lambda r: _first(r, "tasks").write_text("[" * 100_000 + "]" * 100_000),
    "an answer missing": lambda r: _first(r, "answers").unlink(),
    "an answer of another task": lambda r: _first(r, "answers").write_text('{"task_id": "other"}'),
    "an answer that is no object": lambda r: _first(r, "answers").write_text("[1, 2]"),
    "metadata that is no Parquet": lambda r: (r / "metadata.parquet").write_bytes(b"garbage"),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_release_is_one_line_before_any_sample_runs(damage, release, tmp_path):
    """Inspect prints a task's PrerequisiteError as its one line; anything else raised while
    the task is made, or later inside a sample, is an exception group of hundreds of lines."""
    from tests.helpers_release import copy_release

    copy = copy_release(release, tmp_path / "copy")
    DAMAGED[damage](copy)
    with pytest.raises(UserError) as caught:
        gridbench_task(release=str(copy))
    from inspect_ai._util.error import PrerequisiteError

    assert isinstance(caught.value, PrerequisiteError)
    assert caught.value.message.startswith("error: ") and "\n" not in caught.value.message


@pytest.mark.parametrize("release", ["/tmp/a\0b", "x" * 5000])
def test_a_release_path_the_system_cannot_use_is_one_line(release):
    with pytest.raises(UserError, match="not a usable path") as caught:
        gridbench_task(release=release)
    assert caught.value.message.startswith("error: ") and "\n" not in caught.value.message


def test_api_retries_are_the_requests_inspect_retried(release, tmp_path, monkeypatch):
    """Inspect retries a failed request itself (here a stream that sent nothing, which it
    retries for every provider): the score's ``api_retries`` is what Inspect recorded."""
    import tenacity
    from inspect_ai.model._providers.mockllm import MockLLM
    from inspect_ai.model._stream import NoStreamDataError

    monkeypatch.setattr(MockLLM, "retry_wait", lambda self: tenacity.wait_none())
    record = gridbench.load_release(release).filter(domains=["course"], hidden_slots=[4])[0]
    policy = inspect_policy({record.task_id: solving_moves(record)})
    failures = iter([True, False, True, True])

    def flaky(messages, tools, tool_choice, config):
        if next(failures, False):
            raise NoStreamDataError("no data")
        return policy(messages, tools, tool_choice, config)

    logs = inspect_eval(
        "gridbench/gridbench",
        model=get_model("mockllm/model", custom_outputs=flaky),
        task_args={"release": str(release), "task_ids": [record.task_id]},
        log_dir=str(tmp_path),
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    score = read_eval_log(logs[0].location).samples[0].scores["grid_score"]
    assert score.value == "C" and score.metadata["api_retries"] == 3
