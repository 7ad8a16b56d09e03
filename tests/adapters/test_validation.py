"""Validation during training: the callback, dispatched by transformers' own CallbackHandler (what
a Trainer calls) over a two-step toy run, plays the fixed slice through the runner's agent
loop and logs success by H, B and depth; the slice is certified and fixed; bad arguments are
one line. The real Trainer with a torch model is the slow test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gridbench
from gridbench.agents.llm.chat import scripted_chat
from gridbench.agents.llm.loop import Reply
from gridbench_core.errors import UserError


@pytest.fixture(scope="module")
def v():
    """The validation adapter, imported where these tests run: it subclasses transformers'
    callback, half a second to import, which the test worker that runs none of them never pays.
    Without transformers the tests are skipped."""
    pytest.importorskip("transformers")
    import gridbench.adapters.validation

    return gridbench.adapters.validation


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


class RecordingTrainer:
    """What the callback needs of a Trainer: ``log``."""

    def __init__(self) -> None:
        self.logged: list[dict] = []

    def log(self, logs: dict) -> None:
        self.logged.append(logs)


def two_steps(callback: Any, tmp_path: Path) -> Any:
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import CallbackHandler

    handler = CallbackHandler(
        [callback], model=None, processing_class=None, optimizer=None, lr_scheduler=None
    )
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    state, control = TrainerState(), TrainerControl()
    handler.on_train_begin(args, state, control)
    for _ in range(2):
        state.global_step += 1
        handler.on_step_end(args, state, control)
    return state


def test_the_callback_logs_success_by_h_b_and_depth_on_a_two_step_run(release, tmp_path, v):
    tasks = v.validation_slice(release=str(release), domains=["toy", "course"], per_cell=1)
    assert [(t.hidden_slots, t.decoy_budget) for t in tasks] == [(2, 0), (2, 3), (4, 0), (4, 3)]
    trainer = RecordingTrainer()
    callback = v.ValidationCallback(tasks, every=1, trainer=trainer, chat=scripted_chat(tasks), at_start=True)
    two_steps(callback, tmp_path)
    assert len(trainer.logged) == 3 and [h["step"] for h in callback.history] == [0, 1, 2]
    logged = trainer.logged[-1]
    depths = {row["depth"] for row in callback.history[-1]["rows"]}
    expected = {"gridbench/success", "gridbench/fraction_correct", "gridbench/episodes"}
    expected |= {
        "gridbench/success/H=2",
        "gridbench/success/H=4",
        "gridbench/success/B=0",
        "gridbench/success/B=3",
    }
    expected |= {f"gridbench/success/H={h},B={b}" for h in (2, 4) for b in (0, 3)}
    expected |= {f"gridbench/success/depth={d}" for d in depths}
    assert (
        set(logged) == expected and logged["gridbench/success"] == 1.0 and logged["gridbench/episodes"] == 4
    )
    rows = callback.history[-1]["rows"]
    assert all(r["end_reason"] == "done" and r["success"] for r in rows)


def test_without_a_trainer_the_metrics_go_to_the_log_history(release, tmp_path, v):
    tasks = v.validation_slice(release=str(release), domains="toy", hidden_slots=[4], decoy_budgets=[3])
    callback = v.ValidationCallback(tasks, every=2, chat=scripted_chat(tasks))
    state = two_steps(callback, tmp_path)
    assert [entry["step"] for entry in state.log_history] == [2]
    assert state.log_history[0]["gridbench/success/H=4,B=3"] == 1.0


def test_a_model_that_fails_or_says_nothing_scores_zero_and_never_crashes(release, v):
    tasks = v.validation_slice(release=str(release), domains="course", hidden_slots=[4], decoy_budgets=[3])

    def silent(messages, tools):
        return Reply(content="I am thinking.")

    def broken(messages, tools):
        raise RuntimeError("out of memory")

    metrics, rows = v.validate(tasks, silent, max_turns=5, max_reminders=2)
    assert metrics["gridbench/success"] == 0.0 and rows[0]["end_reason"] == "no_tool_call"
    metrics, rows = v.validate(tasks, broken)
    assert rows[0]["end_reason"] == "api_error" and metrics["gridbench/success"] == 0.0


def test_a_generated_slice_is_certified_and_fixed(v):
    first = v.validation_slice(
        domains=["toy"], grid="4x4", hidden_slots=[2, 3], decoy_budgets=[0, 2], per_cell=1
    )
    again = v.validation_slice(
        domains=["toy"], grid="4x4", hidden_slots=[2, 3], decoy_budgets=[0, 2], per_cell=1
    )
    assert [t.task for t in first] == [t.task for t in again]
    assert sorted((t.task["hidden_slots"], t.task["decoy_budget"]) for t in first) == [
        (2, 0),
        (2, 2),
        (3, 0),
        (3, 2),
    ]
    assert all(t.answer["certificate"]["ok"] for t in first)
    assert v.metrics_of([]) == {}
    assert isinstance(first[0], gridbench.GeneratedTask)


def test_bad_arguments_are_one_line(release, v):
    tasks = v.validation_slice(release=str(release), domains="toy", per_cell=1)
    with pytest.raises(UserError, match="every=0"):
        v.ValidationCallback(tasks, every=0)
    with pytest.raises(UserError, match="tasks: give a non-empty list"):
        v.ValidationCallback([1, 2])
    with pytest.raises(UserError, match="failur_rate"):
        v.ValidationCallback(tasks, failur_rate=0.1)
    with pytest.raises(UserError, match="per_cell"):
        v.validation_slice(release=str(release), per_cell=0)
    with pytest.raises(UserError, match="needs the trainer's model"):
        from transformers import TrainerState

        v.ValidationCallback(tasks, every=1).run(TrainerState())


@pytest.mark.slow
def test_the_example_trains_two_steps_with_a_real_trainer_and_logs_the_keys(tmp_path):
    """docs/examples/train_with_validation.py with the tiny random model: a transformers
    Trainer on torch takes two steps, and the callback logs before and after each."""
    import json
    import subprocess
    import sys

    from tests import ROOT

    pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    script = ROOT / "docs" / "examples" / "train_with_validation.py"
    done = subprocess.run(
        [sys.executable, str(script), "--model", "tiny", "--output", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    logged = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"')]
    assert [entry["step"] for entry in logged] == [0, 1, 2]
    keys = {
        "gridbench/success",
        "gridbench/fraction_correct",
        "gridbench/episodes",
        "gridbench/success/H=2,B=0",
    }
    keys |= {"gridbench/success/H=3", "gridbench/success/B=2", "gridbench/success/depth=slot"}
    assert all(keys <= set(entry) for entry in logged) and logged[0]["gridbench/episodes"] == 4.0
