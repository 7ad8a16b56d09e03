"""The reasoning ladder: reference reasoners that use the rules the way an agent can, from the
cheapest to the strongest. A task's *depth* is the lowest rung that decides it (leaves every
hidden cell exactly one option; every rung is sound, so that option is the truth).

0. ``slot``: slot checks only (the locally valid candidates);
1. ``one_round``: one round of interval propagation on the linear rules;
2. ``fixpoint``: interval propagation repeated until nothing changes;
3. ``probing``: the fixpoint, then *probing*: give one cell one of its remaining options,
   propagate to the fixpoint, and discard the option when some cell is left with none;
   repeated over every option of every undecided cell until nothing changes (singleton
   consistency);
4. ``search``: full search (always decides a unique task).

Interval propagation is the one in :mod:`solvers.propagation` (the fixpoint of per-rule
generalised arc consistency is unique, so a queue reaches the same domains as rounds do);
probing's closure is unique too, so the depth does not depend on any order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from gridbench_core.records import Depth
from gridbench_core.task import Task
from solvers.checker import locally_valid_candidates, remembered, rule_excess, rule_measure
from solvers.propagation import LinearRow, Propagation, entailed, linear_rows, propagate, spreads

Cell = tuple[int, int]
RUNGS = ("slot", "one_round", "fixpoint", "probing", "search")
SLOT, ONE_ROUND, FIXPOINT, PROBING, SEARCH = range(len(RUNGS))


def rung_index(name: str) -> int:
    """The index of the rung called ``name``; ValueError naming the rungs otherwise."""
    if name not in RUNGS:
        raise ValueError(f"unknown rung {name!r}; the rungs are {list(RUNGS)}")
    return RUNGS.index(name)


class _Propagator:
    """Queue-based interval propagation over fixed linear rows (the same fixpoint as
    :func:`solvers.propagation.propagate`, reached with less work)."""

    def __init__(self, rows: list[LinearRow]) -> None:
        self.rows = rows
        # the rows of each cell: all of them, and the ones that are not entailed. An entailed
        # row (solvers.propagation.entailed: its worst case meets the bound) never removes an
        # option from domains drawn from its options, and a revision of it only reports a cell
        # that came in empty; about three revisions in four of a generated task were of such
        # rows. The fixpoint leaves them out unless one of their cells comes in empty.
        self.every_row_of: dict[Cell, list[int]] = {}
        self.rows_of: dict[Cell, list[int]] = {}
        self.live: list[int] = []
        quiet: set[Cell] = set()
        for index, row in enumerate(rows):
            skip = entailed(row)
            if not skip:
                self.live.append(index)
            for cell in row.coefficients:
                self.every_row_of.setdefault(cell, []).append(index)
                if skip:
                    quiet.add(cell)
                else:
                    self.rows_of.setdefault(cell, []).append(index)
        self.quiet_cells = tuple(quiet)
        # per row, the widest spread of one cell's coefficients: a row whose slack is at least
        # that can remove no option (most revisions of a generated task), so it is not scanned
        self.spread = spreads(rows)

    def fixpoint(self, domains: dict[Cell, set[str]], cell: Cell | None = None) -> bool:
        """Prune ``domains`` in place to the fixpoint, revising every row or, when ``cell`` is
        given, the rows of ``cell`` (the one a probe or a branch has just narrowed) and what
        their changes reach; False when a domain empties. The same domains and verdict as
        revising every row of the queue (entailed ones included): those only ever answer
        "nothing changed", or a wipe-out when one of their cells came in empty, which is the
        one case where they are revised."""
        rows_of, every = self.rows_of, self.live
        if not all(domains[quiet] for quiet in self.quiet_cells):
            # an empty cell: revise as if no row were entailed
            rows_of, every = self.every_row_of, list(range(len(self.rows)))
        queue = list(every) if cell is None else list(rows_of.get(cell, ()))
        queued = set(queue)
        while queue:
            index = queue.pop()
            queued.discard(index)
            changed = self._revise(self.rows[index], domains, self.spread[index])
            if changed is None:
                return False
            for changed_cell in changed:
                for other in rows_of.get(changed_cell, ()):
                    if other not in queued:
                        queued.add(other)
                        queue.append(other)
        return True

    @staticmethod
    def _revise(row: LinearRow, domains: dict[Cell, set[str]], spread: int) -> list[Cell] | None:
        """Remove the options ``row`` rules out; the cells that changed, None on a wipe-out.
        ``spread`` is the row's widest spread of one cell's coefficients: no option is further
        than that from its cell's most favourable one. (The hottest loop of the ladder: one
        branch per direction, no per-option test of it.)"""
        upper, bound = row.upper, row.bound
        best: dict[Cell, int] = {}
        total = row.constant
        pick = min if upper else max
        for cell, coefficients in row.coefficients.items():
            domain = domains[cell]
            if not domain:
                return None
            best[cell] = value = pick(map(coefficients.__getitem__, domain))
            total += value
        if (total <= bound) if upper else (total >= bound):
            slack = bound - total if upper else total - bound
        else:
            return None  # even the most favourable options break the row
        if slack >= spread:
            return []  # every option is within the slack of its cell's most favourable one
        changed = []
        for cell, coefficients in row.coefficients.items():
            domain = domains[cell]
            if len(domain) == 1:
                continue
            if upper:
                room = best[cell] + slack
                doomed = [o for o in domain if coefficients[o] > room]
            else:
                room = best[cell] - slack
                doomed = [o for o in domain if coefficients[o] < room]
            if doomed:
                domain.difference_update(doomed)
                changed.append(cell)
        return changed


def _open(domains: Mapping[Cell, set[str] | frozenset[str]]) -> int:
    """Options beyond one per cell (an emptied cell counts none)."""
    return sum(max(len(options) - 1, 0) for options in domains.values())


def fold(rows: list[LinearRow], domains: Mapping[Cell, set[str]]) -> list[LinearRow]:
    """``rows`` with every single-option cell folded into the constant (rows left without an
    open cell are dropped when they hold, kept as a constant row when they do not)."""
    out = []
    for row in rows:
        constant, open_cells = row.constant, {}
        for cell, coefficients in row.coefficients.items():
            if len(domains[cell]) == 1:
                constant += coefficients[next(iter(domains[cell]))]
            else:
                open_cells[cell] = coefficients
        holds = constant <= row.bound if row.upper else constant >= row.bound
        if open_cells or not holds:
            out.append(LinearRow(row.rule, row.upper, row.bound, constant, open_cells))
    return out


def probe(rows: list[LinearRow], domains: dict[Cell, set[str]]) -> bool:
    """Singleton consistency in place: discard every option whose trial assignment wipes out
    a domain under propagation, until nothing changes. False when a domain empties."""
    if not _Propagator(rows).fixpoint(domains):
        return False
    return _probe_at_fixpoint(_Propagator(fold(rows, domains)), domains)


def _probe_at_fixpoint(propagator: _Propagator, domains: dict[Cell, set[str]]) -> bool:
    """:func:`probe` from ``domains`` already at the fixpoint, with ``propagator`` over the
    rows folded there (whose cells are the ones open now: a trial copies only those)."""
    open_cells = [c for c in domains if len(domains[c]) > 1]
    changed = True
    while changed:
        changed = False
        for cell in sorted(c for c in open_cells if len(domains[c]) > 1):
            for option in sorted(domains[cell]):
                if len(domains[cell]) == 1:
                    break
                trial = {c: set(domains[c]) if len(domains[c]) > 1 else domains[c] for c in open_cells}
                trial[cell] = {option}
                if not propagator.fixpoint(trial, cell):
                    domains[cell].discard(option)
                    changed = True
                    if not propagator.fixpoint(domains, cell):
                        return False
    return True


def _at_fixpoint(task: Task) -> tuple[Propagation, _Propagator | None]:
    """The locally valid candidates' propagation (:func:`solvers.propagation.propagate`: its
    fixpoint is unique, so the queue of :class:`_Propagator` reaches the same domains), and a
    propagator over the rows folded at its fixpoint (None when a cell is left empty: no
    completion); inside :func:`solvers.checker.task_memo`, found once per task for the rungs,
    the search tree and the joint bits, which all start there."""

    def compute() -> tuple[Propagation, _Propagator | None]:
        options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
        result = propagate(task, options)
        if not all(result.fixpoint.values()):
            return result, None
        domains = {cell: set(ids) for cell, ids in result.fixpoint.items()}
        return result, _Propagator(fold(linear_rows(task, options), domains))

    return remembered("fixpoint", (task,), None, compute)


def rung_domains(task: Task) -> list[dict[Cell, frozenset[str]]]:
    """What each rung up to probing leaves of every hidden cell's options: slot checks, one
    round, the fixpoint, probing (a cell left empty means the rung found no completion);
    inside :func:`solvers.checker.task_memo`, found once per task."""
    return [dict(stage) for stage in remembered("rungs", (task,), None, lambda: _rung_domains(task))]


def _rung_domains(task: Task) -> list[dict[Cell, frozenset[str]]]:
    result, propagator = _at_fixpoint(task)
    domains = {cell: set(ids) for cell, ids in result.fixpoint.items()}
    if propagator is not None and _open(domains) and not _probe_at_fixpoint(propagator, domains):
        domains = {cell: set() for cell in domains}
    return [
        {(s.row, s.col): frozenset(locally_valid_candidates(task, s)) for s in task.slots},
        dict(result.after_one_round),
        dict(result.fixpoint),
        {cell: frozenset(ids) for cell, ids in domains.items()},
    ]


def search_nodes(task: Task, limit: int = 5_000) -> tuple[int, bool]:
    """The size of the complete search tree that propagation to the fixpoint leaves: nodes
    of a depth-first search that propagates at every node, branches on the open cell with the
    fewest options (ties: row, then column) and tries every option, so it proves that no other
    completion exists. 1 when the fixpoint decides the task. Neither the order of the
    candidates nor of the rules changes it (every option of a branching cell is explored, and
    the fixpoint is unique). Returns (nodes, whether ``limit`` stopped the count)."""
    result, propagator = _at_fixpoint(task)  # decided cells are constants from there on
    if propagator is None:
        return 1, False  # no completion: the root alone
    domains = {cell: set(ids) for cell, ids in result.fixpoint.items() if len(ids) > 1}
    stack = [(domains, _branch(domains))]
    nodes = 1
    while stack:
        domains, cell = stack.pop()
        if cell is None:
            continue
        for option in sorted(domains[cell], reverse=True):
            nodes += 1
            if nodes > limit:
                return limit, True
            trial = {c: (set(ids) if len(ids) > 1 else ids) for c, ids in domains.items()}
            trial[cell] = {option}
            if propagator.fixpoint(trial, cell):
                stack.append((trial, _branch(trial)))
    return nodes, False


def _branch(domains: Mapping[Cell, set[str]]) -> Cell | None:
    """The open cell a search branches on: the fewest options, then row, then column."""
    open_cells = [cell for cell, ids in domains.items() if len(ids) > 1]
    return min(open_cells, key=lambda c: (len(domains[c]), c)) if open_cells else None


REGION_LIMIT = 100_000  # combinations of one region enumerated at most


def joint_bits(task: Task) -> float:
    """What is left for reasoning across regions: log2 of the product of the options that
    remain once propagation reaches its fixpoint and every region (the cells a ``cells``-scoped
    rule names) is enumerated on its own -- each option kept only when some combination of the
    region's cells that meets the region's own rules uses it -- both repeated until nothing
    changes. For a task without regions it is the options the fixpoint leaves, in bits; 0 when
    these local steps decide the task. A region of more than :data:`REGION_LIMIT` combinations
    is not enumerated (the value is then an upper bound)."""
    result, propagator = _at_fixpoint(task)
    if propagator is None:
        return 0.0  # no completion
    domains = {cell: set(ids) for cell, ids in result.fixpoint.items()}
    regions: dict[tuple[Cell, ...], list] = {}
    for rule in task.global_constraints:
        if rule.scope == "cells" and rule.cells:
            regions.setdefault(tuple(rule.cells), []).append(rule)
    # from the fixpoint: the regions, then propagation again wherever they changed something
    while any([_enumerate_region(task, cells, rules, domains) for cells, rules in regions.items()]):
        if not all(domains.values()) or not propagator.fixpoint(domains):
            return 0.0  # no completion
    return round(sum(math.log2(len(ids)) for ids in domains.values() if ids), 6)


def _enumerate_region(
    task: Task, cells: tuple[Cell, ...], rules: list, domains: dict[Cell, set[str]]
) -> bool:
    """Keep in each hidden cell of the region the options some combination that meets the
    region's rules uses; whether anything changed."""
    hidden = [cell for cell in cells if cell in domains]
    if not hidden or math.prod(len(domains[cell]) for cell in hidden) > REGION_LIMIT:
        return False
    fixed = [task.items[str(task.grid[r][c])] for r, c in cells if (r, c) not in domains]
    used: dict[Cell, set[str]] = {cell: set() for cell in hidden}
    for combo in itertools.product(*(sorted(domains[cell]) for cell in hidden)):
        records = fixed + [task.items[item] for item in combo]
        if all(rule_excess(rule, rule_measure(rule, records)) <= 0 for rule in rules):
            for cell, item in zip(hidden, combo, strict=True):
                used[cell].add(item)
    changed = False
    for cell in hidden:
        if used[cell] != domains[cell]:
            domains[cell].intersection_update(used[cell])
            changed = True
    return changed


def reasoning_depth(task: Task) -> Depth:
    """The lowest rung of the ladder that decides ``task`` (``search`` when none below does)."""
    stages = rung_domains(task)
    left = [_open(domains) for domains in stages]
    for rung, domains in enumerate(stages):
        if all(len(options) == 1 for options in domains.values()):
            return _depth(rung, left[: rung + 1] + [0] * (len(left) - rung - 1))
    return _depth(SEARCH, left)


def _depth(rung: int, open_after: list[int]) -> Depth:
    return Depth(rung, RUNGS[rung], open_after)
