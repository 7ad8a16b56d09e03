"""Stage 5: difficulty measures of a finished task, from the task data and the roles.

- ``search_space``: product over hidden cells of (1 + its decoys): the locally valid choices.
- ``shallow_decoys``: decoys refuted by one partial global check with only the visible cells
  and that decoy filled.
- ``dfs_nodes``: placements made by a depth-first search that uses only what the tools reveal
  (slot checks, partial global checks), cells row-major, run to the end of its tree: every
  completion is found, so the count does not depend on the order the candidates are listed in
  (a search stopped at its first completion would count the truth's place in that order).
- ``distance_to_ambiguity``: the smallest loosening of any single global bound that admits a
  second completion (CP-SAT, minimising the loosening).
- ``propagation``: decoys eliminated by one round of interval propagation, by propagation to
  the fixpoint, and the *resistant* rest that only search refutes (``solvers/propagation``).
- ``depth``: the lowest rung of the reasoning ladder (slot checks, one round, the fixpoint,
  the fixpoint with probing, search) that decides the task (``solvers/ladder``).
- ``effort``: finer than the depth, and rising where the depth saturates: the nodes of the
  complete search tree left after propagation, and the bits left once the fixpoint and every
  region enumerated on its own have done their part (``solvers/ladder``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench_core.records import Distance, Effort, Measures
from gridbench_core.task import Answer, GlobalRule, Task
from gridbench_core.vocabulary import RuleKind
from solvers.checker import (
    VIOLATED,
    fill,
    locally_valid_candidates,
    rule_excess,
    rule_groups,
    rule_measure,
    rule_status,
)
from solvers.cpsat import CpSatModel
from solvers.ladder import joint_bits, reasoning_depth, search_nodes
from solvers.propagation import decoy_resistance
from solvers.results import FEASIBLE, UNKNOWN, SolverSettings, SolverTimeout

Cell = tuple[int, int]


def search_space(answer: Answer) -> int:
    """Completions of the hidden cells over truth and decoys: the product of (1 + decoys) per cell."""
    return math.prod(1 + len(role.decoys) for role in answer.roles)


def shallow_decoys(task: Task, answer: Answer, search: CanonicalSearch | None = None) -> int:
    """Decoys that one partial check of visible cells plus the decoy already refutes (read
    from the counters of ``search``, a :class:`CanonicalSearch` of ``task`` not yet run, when
    given: the same check, without a grid per decoy)."""
    upper = [rule for rule in task.global_constraints if rule.is_upper_bound]
    where = {} if search is None else {cell: depth for depth, cell in enumerate(search.cells)}
    count = 0
    for role in answer.roles:
        depth = where.get((role.row, role.col))
        for decoy in role.decoys:
            if depth is not None and decoy in search.options[depth]:  # type: ignore[union-attr]
                count += search.refuted_alone(depth, search.options[depth].index(decoy))  # type: ignore[union-attr]
                continue
            grid = [list(row) for row in task.grid]
            grid[role.row][role.col] = decoy
            if any(rule_status(rule, grid, task.items) == VIOLATED for rule in upper):
                count += 1
    return count


class CanonicalSearch:
    """Depth-first search with incremental upper-bound checks (the partial global check).

    Every upper-bound rule group becomes counters (a sum, a count, or one count per value
    for ``repeat_max``); each option of each hidden cell is precomputed as the list of
    (counter, amount) it adds, so a node costs a few integer additions."""

    def __init__(self, task: Task, node_limit: int) -> None:
        self.task, self.node_limit = task, node_limit
        self.cells = [(slot.row, slot.col) for slot in task.slots]
        self.options = [locally_valid_candidates(task, slot) for slot in task.slots]
        self.grid: list[list[str | None]] = [list(row) for row in task.grid]
        counters: dict[tuple[int, int, object], int] = {}
        self.state: list[int] = []
        self.bound: list[int] = []
        upper = [rule for rule in task.global_constraints if rule.is_upper_bound]
        self.lower = [rule for rule in task.global_constraints if not rule.is_upper_bound]
        self.adds: list[list[list[tuple[int, int]]]] = [[[] for _ in o] for o in self.options]
        depth_of = {cell: depth for depth, cell in enumerate(self.cells)}
        for r_index, rule in enumerate(upper):
            for g_index, group in enumerate(rule_groups(rule, task.rows, task.cols)):
                for row, col in group:
                    fixed = self.grid[row][col]
                    if fixed is not None:
                        key, amount = self._key(rule, fixed)
                        slot = self._counter(counters, (r_index, g_index, key), rule.bound)
                        self.state[slot] += amount
                    elif (row, col) in depth_of:
                        depth = depth_of[(row, col)]
                        for k, item_id in enumerate(self.options[depth]):
                            key, amount = self._key(rule, item_id)
                            slot = self._counter(counters, (r_index, g_index, key), rule.bound)
                            if amount:
                                self.adds[depth][k].append((slot, amount))
        self.nodes = 0
        # an upper bound below 0 is broken by any grid, even where no counter stands (a group of
        # cells none of which is visible or has an option: its measure is 0)
        self.broken_from_start = any(v > b for v, b in zip(self.state, self.bound, strict=True)) or any(
            rule.bound < 0 for rule in upper
        )
        # the lower-bound rule groups as counters too, summed only at a leaf (a complete grid)
        self.lower_base: list[int] = []
        self.lower_bound: list[int] = []
        self.lower_adds: list[list[list[tuple[int, int]]]] = [[[] for _ in o] for o in self.options]
        for rule in self.lower:
            for group in rule_groups(rule, task.rows, task.cols):
                slot = len(self.lower_base)
                self.lower_base.append(0)
                self.lower_bound.append(rule.bound)
                for row, col in group:
                    fixed = self.grid[row][col]
                    if fixed is not None:
                        self.lower_base[slot] += _lower_weight(rule, task.items[fixed])
                    elif (row, col) in depth_of:
                        depth = depth_of[(row, col)]
                        for k, item_id in enumerate(self.options[depth]):
                            amount = _lower_weight(rule, task.items[item_id])
                            if amount:
                                self.lower_adds[depth][k].append((slot, amount))

    def _key(self, rule: Any, item_id: str) -> tuple[object, int]:
        value = self.task.items[item_id][rule.attribute]
        if rule.kind == RuleKind.SUM_MAX:
            return "sum", int(value)
        if rule.kind == RuleKind.REPEAT_MAX:
            return value, 1
        return "count", int(value == rule.equals)  # count_max

    def _counter(self, counters: dict, key: tuple, bound: int) -> int:
        if key not in counters:
            counters[key] = len(self.state)
            self.state.append(0)
            self.bound.append(bound)
        return counters[key]

    def refuted_alone(self, depth: int, k: int) -> bool:
        """Whether option ``k`` of the cell at ``depth``, placed beside the visible cells alone,
        breaks an upper bound (the partial global check), before :meth:`run` moves the counters."""
        state, bound = self.state, self.bound
        return self.broken_from_start or any(state[i] + a > bound[i] for i, a in self.adds[depth][k])

    def run(self) -> tuple[int, int, bool]:
        """(nodes, completions found, hit the node limit): the whole tree, so neither count
        depends on the order of any cell's options; a search that hits the limit counts no
        completions (0) and ``limit + 1`` nodes."""
        self.completions = 0
        try:
            self._levels()
        except _LimitReached:
            return self.nodes, 0, True
        return self.nodes, self.completions, False

    # prefixes held as Python lists while there are at most this many of them: numpy's fixed
    # cost a depth is more than a few hundred small rows cost in Python (most trees of a
    # training set stay below it)
    LIST_ROWS = 16

    def _levels(self) -> None:
        """:meth:`_search`'s count, one depth at a time: the prefixes that pass every partial
        check so far are rows of counter values, and a depth tries each option on every row,
        so the tree's nodes are ``sum(rows before depth d * options at d)`` and its completions
        the rows past the last depth whose lower-bound totals hold. The same counts as the
        depth-first definition, at a fraction of the cost on large trees (rows in Python lists
        while they are few, :data:`LIST_ROWS`, then all at once in numpy); past the node limit
        the completions are not counted (``run`` reports the cap)."""
        count = len(self.cells)
        if count == 0:
            self.completions = int(not self.broken_from_start and self._lower_bounds_hold())
            return
        if self.broken_from_start:  # every option of the first cell is tried, none passes
            self.nodes += len(self.options[0])
            if self.nodes > self.node_limit:
                self.nodes = self.node_limit + 1
                raise _LimitReached
            self.completions = 0
            return
        bound, limit, nodes = self.bound, self.node_limit, self.nodes
        rows: list[tuple[list[int], list[int]]] = [(list(self.state), list(self.lower_base))]
        for depth in range(count):
            options = self.adds[depth]
            nodes += len(rows) * len(options)
            if nodes > limit:
                self.nodes = limit + 1
                raise _LimitReached
            lower_adds = self.lower_adds[depth]
            grown: list[tuple[list[int], list[int]]] = []
            for state, totals in rows:
                for adds, lower in zip(options, lower_adds, strict=True):
                    for i, a in adds:
                        if state[i] + a > bound[i]:
                            break
                    else:
                        new_state = state.copy() if adds else state
                        for i, a in adds:
                            new_state[i] += a
                        new_totals = totals.copy() if lower else totals
                        for i, a in lower:
                            new_totals[i] += a
                        grown.append((new_state, new_totals))
            rows = grown
            if not rows:
                self.nodes = nodes
                self.completions = 0
                return
            if len(rows) > self.LIST_ROWS and depth + 1 < count:
                self.nodes = nodes
                self._array_levels(depth + 1, rows)
                return
        self.nodes = nodes
        lower_bound = self.lower_bound
        self.completions = sum(
            all(t >= b for t, b in zip(totals, lower_bound, strict=True)) for _, totals in rows
        )

    def _array_levels(self, first: int, prefixes: list[tuple[list[int], list[int]]]) -> None:
        """:meth:`_levels` from depth ``first`` on, the rows ``prefixes`` all at once in numpy:
        a depth tries each option on every row in one step."""
        import numpy as np  # here: a command's start-up imports this module, not numpy

        count, limit = len(self.cells), self.node_limit
        widths = [len(o) for o in self.options]
        n_upper, n_lower = len(self.state), len(self.lower_base)
        # a counter matters at a depth while some later option still adds to it
        last = [-1] * n_upper
        for depth, adds in enumerate(self.adds):
            for option in adds:
                for i, _ in option:
                    last[i] = depth
        bound = np.asarray(self.bound, dtype=np.int64)
        rows = np.asarray([state for state, _ in prefixes], dtype=np.int64).reshape(len(prefixes), n_upper)
        live = np.arange(n_upper)
        totals = np.asarray([t for _, t in prefixes], dtype=np.int64).reshape(len(prefixes), n_lower)
        nodes = self.nodes
        for depth in range(first, count):
            width = widths[depth]
            nodes += len(rows) * width
            if nodes > limit:
                self.nodes = limit + 1
                raise _LimitReached
            if len(rows) == 0:
                break
            add = np.zeros((width, n_upper), dtype=np.int64)
            lower_add = np.zeros((width, n_lower), dtype=np.int64)
            for k in range(width):
                for i, a in self.adds[depth][k]:
                    add[k, i] += a
                for i, a in self.lower_adds[depth][k]:
                    lower_add[k, i] += a
            add = add[:, live]
            touched = np.flatnonzero(add.any(axis=0))
            if len(touched):
                fits = (rows[:, None, touched] + add[None, :, touched] <= bound[live][touched]).all(axis=2)
            else:
                fits = np.ones((len(rows), width), dtype=bool)
            row_of, option_of = np.nonzero(fits)
            rows = rows[row_of] + add[option_of]
            totals = totals[row_of] + lower_add[option_of]
            # drop the counters no later option adds to (every row already meets them)
            keep = np.asarray([last[i] > depth for i in live], dtype=bool)
            if not keep.all():
                rows, live = rows[:, keep], live[keep]
        self.nodes = nodes
        lower_bound = np.asarray(self.lower_bound, dtype=np.int64)
        self.completions = int((totals >= lower_bound).all(axis=1).sum()) if len(rows) else 0

    def _lower_bounds_hold(self) -> bool:
        return all(rule_status(rule, self.grid, self.task.items) != VIOLATED for rule in self.lower)

    def _search(self, depth: int) -> None:
        """The recursive definition of the search (the reference :meth:`_levels` is tested
        against); call with ``completions`` set to 0."""
        if depth == len(self.cells):  # upper bounds held at every step; now the lower ones
            self.completions += int(not self.broken_from_start and self._lower_bounds_hold())
            return
        cell, state, bound = self.cells[depth], self.state, self.bound
        for item_id, adds in zip(self.options[depth], self.adds[depth], strict=True):
            self.nodes += 1
            if self.nodes > self.node_limit:
                raise _LimitReached
            if self.broken_from_start or any(state[i] + a > bound[i] for i, a in adds):
                continue
            for i, a in adds:
                state[i] += a
            self.grid[cell[0]][cell[1]] = item_id
            self._search(depth + 1)
            self.grid[cell[0]][cell[1]] = None
            for i, a in adds:
                state[i] -= a


def _lower_weight(rule: GlobalRule, record: Mapping[str, Any]) -> int:
    """What one item adds to a lower-bound rule's measure (:func:`solvers.checker.rule_measure`)."""
    value = record[rule.attribute]
    if rule.kind == RuleKind.SUM_MIN:
        return int(value)
    if rule.kind == RuleKind.COUNT_MIN:
        return int(value == rule.equals)
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        return int(int(value) >= int(rule.at_least or 0))
    raise ValueError(f"unknown lower-bound rule kind {rule.kind!r}")


class _LimitReached(Exception):
    pass


def worst_excess(task: Task, rule: GlobalRule, grid: list[list[str | None]]) -> int:
    """By how many units the filled ``grid`` breaks ``rule`` in its worst group (0 or less
    when it holds)."""
    return max(
        rule_excess(rule, rule_measure(rule, [task.items[grid[r][c]] for r, c in group]))  # type: ignore[index]
        for group in rule_groups(rule, task.rows, task.cols)
    )


def one_unit_witness(task: Task, witnesses: Sequence[Mapping[Cell, str]]) -> GlobalRule | None:
    """The rule that the first of ``witnesses`` (completions other than the truth, e.g. the
    counterexamples repair met) breaking exactly one rule, by exactly one unit, breaks: then
    loosening that rule by one admits a second completion, and since the truth is unique no
    smaller loosening does. A witness that is not a completion of this task's locally valid
    candidates (a cell it lacks, an item the task does not offer there) is skipped. None when
    no witness does."""
    options = {(slot.row, slot.col): set(locally_valid_candidates(task, slot)) for slot in task.slots}
    for witness in witnesses:
        if any(witness.get(cell) not in valid for cell, valid in options.items()):
            continue
        grid = fill(task, witness)
        broken = []
        for rule in task.global_constraints:
            excess = worst_excess(task, rule, grid)
            if excess > 0:
                broken.append((rule, excess))
                if len(broken) > 1:
                    break
        if len(broken) == 1 and broken[0][1] == 1:
            return broken[0][0]
    return None


def distance_to_ambiguity(
    task: Task,
    answer: Answer,
    settings: SolverSettings | None,
    model: CpSatModel | None = None,
    witnesses: Sequence[Mapping[Cell, str]] = (),
) -> Distance:
    """The smallest loosening of any single bound that lets a second completion through, the
    rule loosened, and that loosening as a share of the bound: one unit when a witness shows it
    (:func:`one_unit_witness`, no solver), else one CP-SAT optimisation."""
    rule = one_unit_witness(task, witnesses)
    if rule is not None:
        return Distance(1, round(1 / rule.bound, 6) if rule.bound else None, rule.name)
    model = model or CpSatModel(task, settings, answer.truth_choice())
    result = model.least_loosening_to_ambiguity()
    if result.status == UNKNOWN:
        raise SolverTimeout(f"task {task.task_id}: distance to ambiguity returned UNKNOWN")
    if result.status != FEASIBLE or result.objective is None or result.solution is None:
        return Distance(None, None, None)
    grid = fill(task, result.solution)
    broken = [rule for rule in task.global_constraints if worst_excess(task, rule, grid) > 0]
    rule = broken[0] if broken else None
    share = round(result.objective / rule.bound, 6) if rule is not None and rule.bound else None
    return Distance(result.objective, share, rule.name if rule else None)


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


def measure(
    task: Task,
    answer: Answer,
    settings: SolverSettings,
    node_limit: int,
    model: CpSatModel | None = None,
    witnesses: Sequence[Mapping[Cell, str]] = (),
) -> Measures:
    """All measures of a certified task (``model``: the task's CP-SAT model; ``witnesses``:
    completions other than the truth that may settle the distance to ambiguity)."""
    search = CanonicalSearch(task, node_limit)
    shallow = shallow_decoys(task, answer, search)  # from the counters, before the search moves them
    nodes, completions, capped = search.run()
    if completions > 1 or (completions != 1 and not capped):
        raise RuntimeError(
            f"task {task.task_id}: the canonical search found {completions} completions where the "
            "certificate proves exactly one"
        )
    space = search_space(answer)
    return Measures(
        search_space=space,
        log10_search_space=round(math.log10(space), 6),
        shallow_decoys=shallow,
        dfs_nodes=nodes,
        dfs_capped=capped,
        distance_to_ambiguity=distance_to_ambiguity(task, answer, settings, model, witnesses),
        propagation=decoy_resistance(task, {(r.row, r.col): list(r.decoys) for r in answer.roles}),
        decoy_direction=decoy_direction(task, answer),
        depth=reasoning_depth(task),
        effort=effort(task),
    )


SEARCH_NODE_LIMIT = 5_000  # nodes of the finer measure's search tree counted at most (about a second)


def effort(task: Task, limit: int = SEARCH_NODE_LIMIT) -> Effort:
    """The finer difficulty measures of ``task`` (:class:`gridbench_core.records.Effort`)."""
    nodes, capped = search_nodes(task, limit)
    return Effort(nodes, capped, joint_bits(task))


__all__ = ["CanonicalSearch", "measure", "search_space", "shallow_decoys"]
