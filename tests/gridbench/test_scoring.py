"""Scoring trusts nothing it is given: ``gridbench.score`` and the episode's score on a small
hand-built task with a unique completion, against hostile grids placed where each check matters
(a lying ``str`` only in the hidden cells, where the fixed-cell check cannot hide it)."""

from __future__ import annotations

import dataclasses

import pytest

import gridbench
from gridbench.env import EnvSettings, Episode, score_episode
from gridbench.env.scoring import score_grid, solve_truth
from gridbench_core.task import GlobalRule
from tests.tiny import ANSWER, TASK, TRUTH


class Liar(str):
    """Equal to everything: a grid of these must never score."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def _with(cells: dict, grid=TRUTH) -> list[list]:
    out = [list(row) for row in grid]
    for (row, col), value in cells.items():
        out[row][col] = value
    return out


def test_the_truth_scores_with_and_without_the_answer():
    expected = {"success": True, "fraction_correct": 1.0, "wrong_cells": [], "fixed_cells_changed": []}
    assert gridbench.score(TASK, TRUTH, ANSWER) == expected
    assert gridbench.score(TASK.to_dict(), TRUTH, ANSWER.to_dict()) == expected
    assert gridbench.score(TASK, TRUTH) == expected  # the truth found by solving
    assert solve_truth(TASK) == {(0, 1): "C", (1, 2): "G"}


@pytest.mark.parametrize("answer", [ANSWER, None])
def test_a_lying_string_only_in_the_hidden_cells_never_scores(answer):
    for cells, wrong in (
        ({(0, 1): Liar("C"), (1, 2): Liar("x")}, [[0, 1], [1, 2]]),
        ({(1, 2): Liar("G")}, [[1, 2]]),
        ({(0, 1): Liar("anything")}, [[0, 1]]),
    ):
        scored = gridbench.score(TASK, _with(cells), answer)
        assert scored["success"] is False and scored["wrong_cells"] == wrong
        assert scored["fixed_cells_changed"] == []
        assert scored["fraction_correct"] == (2 - len(wrong)) / 2


def test_a_lying_or_changed_fixed_cell_is_not_a_success():
    for value in (Liar("V02"), "A"):
        scored = gridbench.score(TASK, _with({(0, 2): value}), ANSWER)
        assert scored == {
            "success": False,
            "fraction_correct": 1.0,
            "wrong_cells": [],
            "fixed_cells_changed": [[0, 2]],
        }


def test_wrong_cells_and_fractions():
    scored = gridbench.score(TASK, _with({(0, 1): "A"}), ANSWER)
    assert scored["wrong_cells"] == [[0, 1]] and scored["fraction_correct"] == 0.5 and not scored["success"]
    both = gridbench.score(TASK, _with({(0, 1): None, (1, 2): "F"}), ANSWER)
    assert both["wrong_cells"] == [[0, 1], [1, 2]] and both["fraction_correct"] == 0.0
    rows_as_tuples = [tuple(row) for row in TRUTH]
    assert gridbench.score(TASK, rows_as_tuples, ANSWER)["success"] is True


@pytest.mark.parametrize(
    "grid",
    [
        [row[:2] for row in TRUTH],
        TRUTH[:1],
        [*TRUTH, TRUTH[0]],
        ["V00CV02", "V10V11G"],
        [b"abc", b"def"],
        "V00CV02V10V11G",
        None,
        [None, None],
    ],
)
def test_a_grid_of_the_wrong_shape_scores_zero(grid):
    assert gridbench.score(TASK, grid, ANSWER) == {
        "success": False,
        "fraction_correct": 0.0,
        "wrong_cells": [[0, 1], [1, 2]],
        "fixed_cells_changed": [],
    }


def test_score_grid_on_its_own():
    truth = {(0, 1): "C", (1, 2): "G"}
    assert score_grid(TRUTH, truth) == {"success": True, "fraction_correct": 1.0, "wrong_cells": []}
    assert score_grid([[None] * 3], truth)["wrong_cells"] == [[0, 1], [1, 2]]  # a missing row
    assert score_grid({0: {1: "C"}}, truth)["wrong_cells"] == [[1, 2]]  # mappings are indexed too
    assert score_grid(5, truth)["fraction_correct"] == 0.0
    assert score_grid([], {}) == {"success": True, "fraction_correct": 1.0, "wrong_cells": []}


def test_an_answer_of_another_task_or_no_task_is_a_user_error():
    other = dataclasses.replace(ANSWER, task_id="toy-other")
    with pytest.raises(gridbench.UserError, match="the answer is for task toy-other"):
        gridbench.score(TASK, TRUTH, other)
    for bad in (None, "x", 5, [TASK]):
        with pytest.raises(gridbench.UserError, match="task must be"):
            gridbench.score(bad, TRUTH, ANSWER)
    with pytest.raises(gridbench.UserError, match="answer must be"):
        gridbench.score(TASK, TRUTH, "x")


def test_a_task_without_a_completion_cannot_be_scored_without_its_answer():
    impossible = dataclasses.replace(TASK, global_constraints=(GlobalRule("w", "sum_min", "weight", 99),))
    with pytest.raises(gridbench.UserError, match="no completion satisfies its rules"):
        gridbench.score(impossible, TRUTH)


def test_the_episode_score_counts_what_the_episode_spent():
    episode = Episode(TASK, EnvSettings(failure_rate=0.0))
    episode.call(
        "query_toy_candidate_from_attribute",
        {"row": 0, "col": 1, "field": "cost", "operator": "=", "value": 3},
    )
    episode.call("set_slot", {"row": 0, "col": 1, "id": "C"})
    episode.call("set_slot", {"row": 1, "col": 2, "id": "F"})
    episode.call("check_toy_global_constraints")
    episode.call("set_slot", {"row": 9, "col": 9, "id": "C"})  # invalid
    result = score_episode(episode, ANSWER)
    assert result == {
        "success": False,
        "fraction_correct": 0.5,
        "steps": 5,
        "invalid_calls": 1,
        "failed_calls": 0,
        "queries_used": 1,
        "checks_used": 1,
        "finished": False,
        "decoy_cells": 2,
        "decoy_cells_correct": 1,
        "decoy_cells_chance": pytest.approx(1 / 3 + 1 / 3),
        "calls": {"check_toy_global_constraints": 1, "query_toy_candidate_from_attribute": 1, "set_slot": 3},
    }
    episode.call("set_slot", {"row": 1, "col": 2, "id": "G"})
    episode.call("done")
    final = score_episode(episode, ANSWER)
    assert final["success"] and final["finished"] and final["decoy_cells_correct"] == 2
    assert list(final["calls"]) == sorted(final["calls"])


def test_one_public_function_is_called_score():
    """``gridbench.score(task, grid, answer)`` is the only public ``score``; the episode's
    is ``score_episode`` (two functions of one name took different arguments)."""
    import importlib
    import pkgutil

    import gridbench.env

    assert gridbench.score is importlib.import_module("gridbench.scoring").score
    assert not hasattr(gridbench.env, "score") and "score_episode" in gridbench.env.__all__
    named = []
    for info in pkgutil.walk_packages(gridbench.__path__, "gridbench."):
        if ".mcp" in info.name or ".adapters." in info.name:
            continue  # optional extras (their own dependencies)
        module = importlib.import_module(info.name)
        function = getattr(module, "score", None)
        if callable(function) and getattr(function, "__module__", "") == info.name:
            named.append(info.name)
    assert named == ["gridbench.scoring"]


def test_task_of_and_answer_of_take_objects_or_file_dicts_and_name_anything_else():
    from gridbench.scoring import answer_of, task_of

    read = task_of(TASK.to_dict())  # a file's dict records its format ("1")
    assert task_of(TASK) is TASK and dataclasses.replace(read, format=TASK.format) == TASK
    assert answer_of(ANSWER) is ANSWER and answer_of(ANSWER.to_dict()).truth == ANSWER.truth
    with pytest.raises(gridbench.UserError, match=r"^score: task must be a task file's dict, got int$"):
        task_of(7)
    with pytest.raises(gridbench.UserError, match=r"^score: answer must be an answer file's dict, got str$"):
        answer_of("x")
    with pytest.raises(gridbench.UserError) as refused:  # a field of the wrong type is named
        task_of({**TASK.to_dict(), "decoy_budget": None})
    assert str(refused.value) == "task toy-tiny decoy_budget must be an integer, got 'None'"
    with pytest.raises(gridbench.UserError) as refused:  # anything else: the reason, cut to 80
        task_of({**TASK.to_dict(), "grid": 5})
    assert str(refused.value).startswith("score: the task is not a task file's dict (TypeError: ")
    with pytest.raises(gridbench.UserError) as refused:
        answer_of({**ANSWER.to_dict(), "truth": 5})
    expected = "score: the answer is not an answer file's dict (TypeError: 'int' object is not iterable)"
    assert str(refused.value) == expected


def test_a_truth_that_cannot_be_proved_unique_is_refused_with_what_is_known():
    import ast

    import solvers.cpsat as cpsat
    from solvers.results import UNKNOWN, SolveResult
    from tests.tiny import OPEN_TASK

    long_id = dataclasses.replace(OPEN_TASK, task_id="toy-" + "x" * 70)
    with pytest.raises(gridbench.UserError) as refused:
        solve_truth(long_id)
    message = str(refused.value)
    head = (
        f"task {ascii(long_id.task_id[:60])}: its truth is not unique (two completions satisfy every rule; "
    )
    assert message.startswith(head + "they differ at [(") and message.endswith(
        "]); only an answer says which one is meant: score(task, grid, answer)"
    )
    cells = ast.literal_eval(message[len(head + "they differ at ") : message.index("]") + 1])
    assert cells == [(0, 1)]  # the three completions all hold G at (1, 2): they differ at (0, 1) only

    real_solve, real_other = cpsat.CpSatModel.solve, cpsat.CpSatModel.other_completion
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpsat.CpSatModel, "solve", lambda self, *a, **k: SolveResult(UNKNOWN, 1.0))
        with pytest.raises(gridbench.UserError) as refused:
            solve_truth(TASK)
    assert str(refused.value) == (
        "task 'toy-tiny': the solver found no completion in its time limit; score it with its answer"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpsat.CpSatModel, "other_completion", lambda self: SolveResult(UNKNOWN, 1.0))
        with pytest.raises(gridbench.UserError) as refused:
            solve_truth(TASK)
    assert str(refused.value) == (
        "task 'toy-tiny': uniqueness could not be proved in the solver's time limit; pass the answer"
    )
    assert (cpsat.CpSatModel.solve, cpsat.CpSatModel.other_completion) == (real_solve, real_other)
    assert solve_truth(TASK) == {(0, 1): "C", (1, 2): "G"}
