"""Stage 5: difficulty measures of a finished task, from the task data and the roles.

- ``search_space``: product over hidden cells of (1 + its decoys): the locally valid choices.
- ``shallow_decoys``: decoys refuted by one partial global check with only the visible cells
  and that decoy filled.
- ``dfs_nodes``: placements made by a canonical depth-first search that uses only what the
  tools reveal (slot checks, partial global checks); cells row-major, candidates as listed.
- ``distance_to_ambiguity``: the smallest loosening of any single global bound that admits a
  second completion (CP-SAT, minimising the loosening).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Any

from solvers.checker import (
    VIOLATED,
    check_global,
    locally_valid_candidates,
    rule_groups,
    rule_status,
)
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, UNKNOWN, SolverSettings
from solvers.task import Answer, Task

Cell = tuple[int, int]


def search_space(answer: Answer) -> int:
    return math.prod(1 + len(role.decoys) for role in answer.roles)


def shallow_decoys(task: Task, answer: Answer) -> int:
    """Decoys that one partial check of visible cells plus the decoy already refutes."""
    upper = [rule for rule in task.global_constraints if rule.is_upper_bound]
    count = 0
    for role in answer.roles:
        for decoy in role.decoys:
            grid = [list(row) for row in task.grid]
            grid[role.row][role.col] = decoy
            if any(rule_status(rule, grid, task.items) == VIOLATED for rule in upper):
                count += 1
    return count


class CanonicalSearch:
    """Depth-first search with incremental upper-bound checks (the partial global check)."""

    def __init__(self, task: Task, node_limit: int) -> None:
        self.task, self.node_limit = task, node_limit
        self.cells = [(slot.row, slot.col) for slot in task.slots]
        self.options = [locally_valid_candidates(task, slot) for slot in task.slots]
        self.grid: list[list[str | None]] = [list(row) for row in task.grid]
        self.upper = [rule for rule in task.global_constraints if rule.is_upper_bound]
        self.state: dict[tuple[int, int], Counter] = {}
        self.groups_of: dict[Cell, list[tuple[int, int]]] = {cell: [] for cell in self.cells}
        for r_index, rule in enumerate(self.upper):
            for g_index, group in enumerate(rule_groups(rule, task.rows, task.cols)):
                counter: Counter = Counter()
                for row, col in group:
                    item_id = self.grid[row][col]
                    if item_id is not None:
                        self._apply(counter, rule, item_id, +1)
                    elif (row, col) in self.groups_of:
                        self.groups_of[(row, col)].append((r_index, g_index))
                self.state[(r_index, g_index)] = counter
        self.nodes = 0
        empty = [list(row) for row in task.grid]
        self.broken_from_start = any(rule_status(rule, empty, task.items) == VIOLATED
                                     for rule in self.upper)  # fmt: skip

    def _apply(self, counter: Counter, rule: Any, item_id: str, sign: int) -> None:
        value = self.task.items[item_id][rule.attribute]
        if rule.kind == "sum_max":
            counter["sum"] += sign * int(value)
        elif rule.kind == "repeat_max":
            counter[value] += sign
        elif value == rule.equals:  # count_max
            counter["count"] += sign

    def _violates(self, cell: Cell, item_id: str) -> bool:
        if self.broken_from_start:
            return True
        for r_index, g_index in self.groups_of[cell]:
            rule = self.upper[r_index]
            counter = self.state[(r_index, g_index)]
            value = self.task.items[item_id][rule.attribute]
            if rule.kind == "sum_max":
                measure = counter["sum"] + int(value)
            elif rule.kind == "repeat_max":
                measure = counter[value] + 1
            else:
                measure = counter["count"] + int(value == rule.equals)
            if measure > rule.bound:
                return True
        return False

    def _place(self, cell: Cell, item_id: str | None, old: str | None) -> None:
        for r_index, g_index in self.groups_of[cell]:
            rule, counter = self.upper[r_index], self.state[(r_index, g_index)]
            if old is not None:
                self._apply(counter, rule, old, -1)
            if item_id is not None:
                self._apply(counter, rule, item_id, +1)
        self.grid[cell[0]][cell[1]] = item_id

    def run(self) -> tuple[int, bool, bool]:
        """(nodes, found a completion, hit the node limit)."""
        try:
            found = self._search(0)
        except _LimitReached:
            return self.nodes, False, True
        return self.nodes, found, False

    def _search(self, depth: int) -> bool:
        if depth == len(self.cells):
            return all(s != VIOLATED for s in check_global(self.task, self.grid).values())
        cell = self.cells[depth]
        for item_id in self.options[depth]:
            self.nodes += 1
            if self.nodes > self.node_limit:
                raise _LimitReached
            if self._violates(cell, item_id):
                continue
            self._place(cell, item_id, None)
            if self._search(depth + 1):
                return True
            self._place(cell, None, item_id)
        return False


class _LimitReached(Exception):
    pass


def distance_to_ambiguity(task: Task, answer: Answer, settings: SolverSettings) -> dict[str, Any]:
    """Per rule, the smallest loosening of its bound that lets a second completion through."""
    model = CpSatModel(task, settings, answer.truth_choice())
    per_rule: dict[str, int | None] = {}
    for rule in task.global_constraints:
        result = model.loosening_to_ambiguity(rule.name)
        if result.status == UNKNOWN:
            raise TimeoutError(f"distance to ambiguity of {rule.name}: solver returned UNKNOWN")
        per_rule[rule.name] = result.objective if result.status == FEASIBLE else None
    finite = {name: units for name, units in per_rule.items() if units is not None}
    if not finite:
        return {"units": None, "share": None, "rule": None, "per_rule": per_rule}
    name = min(finite, key=lambda n: (finite[n], n))
    bound = next(rule.bound for rule in task.global_constraints if rule.name == name)
    share = round(finite[name] / bound, 6) if bound else None
    return {"units": finite[name], "share": share, "rule": name, "per_rule": per_rule}


def decoy_direction(task: Task, answer: Answer) -> dict[str, list[int]]:
    """Per summed attribute: decoys [above, below, equal to] their cell's truth."""
    attributes = sorted({r.attribute for r in task.global_constraints if r.kind.startswith("sum")})
    out = {attribute: [0, 0, 0] for attribute in attributes}
    for role in answer.roles:
        truth = task.items[role.truth]
        for decoy in role.decoys:
            for attribute in attributes:
                delta = int(task.items[decoy][attribute]) - int(truth[attribute])
                out[attribute][0 if delta > 0 else 1 if delta < 0 else 2] += 1
    return out


def measure(task: Task, answer: Answer, settings: SolverSettings,
            node_limit: int) -> tuple[dict[str, Any], float]:  # fmt: skip
    """All measures and the milliseconds they took."""
    start = time.perf_counter()
    nodes, found, capped = CanonicalSearch(task, node_limit).run()
    if not found and not capped:
        raise RuntimeError(f"task {task.task_id}: canonical search found no completion")
    space = search_space(answer)
    result = {
        "search_space": space,
        "log10_search_space": round(math.log10(space), 6),
        "shallow_decoys": shallow_decoys(task, answer),
        "dfs_nodes": nodes,
        "dfs_capped": capped,
        "distance_to_ambiguity": distance_to_ambiguity(task, answer, settings),
        "decoy_direction": decoy_direction(task, answer),
    }
    return result, (time.perf_counter() - start) * 1000.0


__all__ = ["CanonicalSearch", "measure", "search_space", "shallow_decoys"]
