"""``gridbench.score(task, grid)``: score a submitted grid without an episode (single-shot
evaluation, RL rewards) -- the same scoring as an episode's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.task import Answer, Task
from core.task_io import answer_from_dict, task_from_dict
from gridbench.env.scoring import score_grid, solve_truth


def score(
    task: Mapping[str, Any] | Task,
    grid: Sequence[Sequence[Any]],
    answer: Mapping[str, Any] | Answer | None = None,
) -> dict[str, Any]:
    """``success``, ``fraction_correct`` and ``wrong_cells`` ([row, col] pairs) of ``grid`` (a
    list of rows of ids) for ``task`` (the dict of a task file, or a Task). The truth comes
    from ``answer`` when given (it must be this task's), else from solving the task: its
    completion is unique. A grid that is not rows x cols scores 0; a grid that changes a
    fixed cell is not a success (``fixed_cells_changed`` lists them)."""
    from core.errors import UserError

    parsed: Task = _parsed(task, Task, task_from_dict, "a task file's dict")
    if answer is None:
        truth = solve_truth(parsed)
    else:
        given: Answer = _parsed(answer, Answer, answer_from_dict, "an answer file's dict")
        if given.task_id != parsed.task_id:
            raise UserError(f"score: the answer is for task {given.task_id}, not {parsed.task_id}")
        truth = given.truth_choice()
        hidden = {(slot.row, slot.col) for slot in parsed.slots}
        if set(truth) != hidden:
            stray = sorted(set(truth) ^ hidden)[:3]
            raise UserError(
                f"score: the answer's cells are not the task's hidden cells (e.g. {stray}); "
                "pass the answer file of this task"
            )
    if not _shaped(grid, parsed.rows, parsed.cols):
        return {
            "success": False,
            "fraction_correct": 0.0,
            "wrong_cells": [[r, c] for r, c in sorted(truth)],
            "fixed_cells_changed": [],
        }
    graded = score_grid(grid, truth)
    changed = [
        [r, c]
        for r, row in enumerate(parsed.grid)
        for c, item in enumerate(row)
        if item is not None and (type(grid[r][c]) is not str or grid[r][c] != item)
    ]
    return {**graded, "success": graded["success"] and not changed, "fixed_cells_changed": changed}


def task_of(value: Any) -> Task:
    """A :class:`Task` from a Task or a task file's dict; anything else (a missing field, a
    wrong type, absurd nesting) is a :class:`UserError` naming what is wrong."""
    parsed: Task = _parsed(value, Task, task_from_dict, "a task file's dict")
    return parsed


def answer_of(value: Any) -> Answer:
    """An :class:`Answer` from an Answer or an answer file's dict (as :func:`task_of`)."""
    parsed: Answer = _parsed(value, Answer, answer_from_dict, "an answer file's dict")
    return parsed


def _parsed(value: Any, kind: type, parse: Any, what: str) -> Any:
    """``value`` as a ``kind`` (given as one, or as the dict of its file)."""
    from core.errors import UserError

    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        try:
            return parse(dict(value))
        except UserError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as error:
            why = f"{type(error).__name__}: {str(error)[:80]}"
            raise UserError(f"score: the {kind.__name__.lower()} is not {what} ({why})") from None
    raise UserError(f"score: {kind.__name__.lower()} must be {what}, got {type(value).__name__}")


def _shaped(grid: Any, rows: int, cols: int) -> bool:
    def is_list(value: Any) -> bool:
        return isinstance(value, Sequence) and not isinstance(value, str | bytes)

    return is_list(grid) and len(grid) == rows and all(is_list(row) and len(row) == cols for row in grid)
