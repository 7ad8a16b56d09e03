"""Scoring (docs/spec.md, section 6 "Scoring"): of a grid against the truth, and of an episode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.env.episode import Episode
from gridbench_core.task import Answer, Task

Cell = tuple[int, int]


def score_grid(grid: Sequence[Sequence[Any]], truth: Mapping[Cell, str]) -> dict[str, Any]:
    """Success (every hidden cell holds its truth), the fraction right and the wrong cells;
    a grid of the wrong shape scores 0 rather than raising."""
    wrong = []
    for (row, col), item in sorted(truth.items()):
        try:
            placed = grid[row][col]
        except (IndexError, KeyError, TypeError):
            placed = None
        if type(placed) is not str or placed != item:  # a str subclass may lie in __eq__
            wrong.append([row, col])
    right = len(truth) - len(wrong)
    return {
        "success": not wrong,
        "fraction_correct": right / len(truth) if truth else 1.0,
        "wrong_cells": wrong,
    }


def solve_truth(task: Task) -> dict[Cell, str]:
    """The truth of a task without its answer file: its completion (CP-SAT), once a second
    solve has proved that no other completion exists. A task whose truth cannot be proved
    unique (two completions, or a solver time-out) is refused: scoring it would call one of
    two right answers wrong."""
    from gridbench_core.errors import UserError
    from solvers.cpsat import CpSatModel
    from solvers.results import FEASIBLE, INFEASIBLE, UNKNOWN

    name = ascii(task.task_id[:60])
    result = CpSatModel(task).solve([])
    if result.status == UNKNOWN:
        raise UserError(
            f"task {name}: the solver found no completion in its time limit; score it with its answer"
        )
    if result.status != FEASIBLE or result.solution is None:
        raise UserError(f"task {name}: no completion satisfies its rules ({result.status})")
    other = CpSatModel(task, truth=result.solution).other_completion()
    if other.status == FEASIBLE and other.solution is not None:
        cells = sorted(cell for cell in other.solution if other.solution[cell] != result.solution[cell])
        raise UserError(
            f"task {name}: its truth is not unique (two completions satisfy every rule; they differ "
            f"at {cells[:5]}); only an answer says which one is meant: score(task, grid, answer)"
        )
    if other.status != INFEASIBLE:
        raise UserError(
            f"task {name}: uniqueness could not be proved in the solver's time limit; pass the answer"
        )
    return result.solution


def score_episode(episode: Episode, answer: Answer) -> dict[str, Any]:
    """An episode's grid against its answer, with what the episode spent."""
    truth = answer.truth_choice()
    graded = score_grid(episode.grid, truth)
    decoy_roles = [role for role in answer.roles if role.decoys]
    return {
        "success": graded["success"],
        "fraction_correct": graded["fraction_correct"],
        "steps": episode.steps,
        "invalid_calls": episode.invalid,
        "failed_calls": episode.failures,
        "queries_used": episode.queries_used,
        "checks_used": episode.checks_used,
        "finished": episode.finished,
        "decoy_cells": len(decoy_roles),
        "decoy_cells_correct": sum(episode.grid[r.row][r.col] == r.truth for r in decoy_roles),
        "decoy_cells_chance": sum(1 / (1 + len(r.decoys)) for r in decoy_roles),
        "calls": dict(sorted(episode.calls.items())),
    }
