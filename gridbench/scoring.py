"""``gridbench.score(task, grid)``: score a submitted grid without an episode (single-shot
evaluation, RL rewards) -- the same scoring as an episode's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from env.scoring import score_grid, solve_truth
from solvers.task import Answer, Task
from solvers.task_io import answer_from_dict, task_from_dict


def score(
    task: Mapping[str, Any] | Task,
    grid: Sequence[Sequence[Any]],
    answer: Mapping[str, Any] | Answer | None = None,
) -> dict[str, Any]:
    """``success``, ``fraction_correct`` and ``wrong_cells`` ([row, col] pairs) of ``grid`` (a
    list of rows of ids) for ``task`` (the dict of a task file, or a Task). The truth comes
    from ``answer`` when given, else from solving the task: its completion is unique."""
    parsed = task if isinstance(task, Task) else task_from_dict(dict(task))
    if answer is None:
        truth = solve_truth(parsed)
    else:
        truth = (answer if isinstance(answer, Answer) else answer_from_dict(dict(answer))).truth_choice()
    return score_grid(grid, truth)
