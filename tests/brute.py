"""Brute-force references used by the tests (exponential; small grids only)."""

from __future__ import annotations

import itertools

from gridbench_core.task import Task
from solvers.checker import (
    SATISFIED,
    check_global,
    fill,
    locally_valid_candidates,
    rule_excess,
    rule_groups,
    rule_measure,
)

Cell = tuple[int, int]


def all_choices(task: Task):
    cells = [(s.row, s.col) for s in task.slots]
    options = [locally_valid_candidates(task, s) for s in task.slots]
    for combo in itertools.product(*options):
        yield dict(zip(cells, combo, strict=True))


def completions(task: Task) -> list[dict[Cell, str]]:
    return [
        choice
        for choice in all_choices(task)
        if all(v == SATISFIED for v in check_global(task, fill(task, choice)).values())
    ]


def loosening_needed(task: Task, choice: dict[Cell, str], rule_name: str) -> int | None:
    """Units rule ``rule_name`` must loosen for ``choice`` to pass; None if another breaks."""
    grid = fill(task, choice)
    needed = 0
    for rule in task.global_constraints:
        worst = max(
            rule_excess(rule, rule_measure(rule, [task.items[grid[r][c]] for r, c in g]))
            for g in rule_groups(rule, task.rows, task.cols)
        )
        if rule.name == rule_name:
            needed = max(0, worst)
        elif worst > 0:
            return None
    return needed


def distance(task: Task, truth: dict[Cell, str], rule_name: str) -> int | None:
    best = None
    for choice in all_choices(task):
        if choice == truth:
            continue
        units = loosening_needed(task, choice, rule_name)
        if units is not None and (best is None or units < best):
            best = units
    return best
