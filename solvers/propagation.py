"""Interval (bounds) propagation on the linear rules: the cheap, legitimate reasoning that an
agent can do without search.

Every rule group is a one-sided linear constraint over the hidden cells' choices (``repeat_max``
gives one per value). An option of a hidden cell is *eliminated* when, even with the most
favourable remaining options in the other cells of the group, the constraint cannot hold.
A *round* evaluates every constraint against the domains as they were at the start of the
round and then removes what it found; propagation repeats rounds until nothing changes (the
fixpoint). Decoys still standing at the fixpoint are *resistant*: refuting them needs search.
For a one-sided linear constraint this is exactly generalised arc consistency, so the tests
compare it with an enumeration of supports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gridbench_core.records import Resistance
from gridbench_core.task import GlobalRule, Task
from gridbench_core.vocabulary import RuleKind
from solvers.checker import locally_valid_candidates, remembered, rule_groups

Cell = tuple[int, int]


@dataclass(frozen=True)
class LinearRow:
    """``constant + sum(coefficient[cell][option]) <= bound`` (or ``>=`` when not upper)."""

    rule: str
    upper: bool
    bound: int
    constant: int
    coefficients: dict[Cell, dict[str, int]]


def _weigher(rule: GlobalRule) -> Callable[[object], int]:
    """What one option of a hidden cell adds to ``rule``'s measure, as a function of its value
    alone (the kind read once per rule, not once per option): the value of a sum, 1 or 0 for a
    count (``repeat_max`` has rows of its own, :func:`_value_rows`)."""
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return int  # type: ignore[return-value]
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        at_least = int(rule.at_least or 0)
        return lambda value: int(int(value) >= at_least)  # type: ignore[call-overload]
    equals = rule.equals
    return lambda value: int(value == equals)


def options_key(options: Mapping[Cell, list[str]]) -> tuple[tuple[Cell, tuple[str, ...]], ...]:
    """``options`` as a key of :func:`solvers.checker.remembered` (their order included)."""
    return tuple((cell, tuple(ids)) for cell, ids in options.items())


def linear_rows(task: Task, options: Mapping[Cell, list[str]]) -> list[LinearRow]:
    """The task's global rules as one-sided linear rows over the given options (inside
    :func:`solvers.checker.task_memo`, built once per task and options; the rows are read,
    never changed, by their users)."""
    return list(remembered("rows", (task,), options_key(options), lambda: _linear_rows(task, options)))


def _linear_rows(task: Task, options: Mapping[Cell, list[str]]) -> tuple[LinearRow, ...]:
    rows = []
    for rule in task.global_constraints:
        for group in rule_groups(rule, task.rows, task.cols):
            hidden = [cell for cell in group if cell in options]
            if not hidden:
                continue
            fixed = [task.items[str(task.grid[r][c])] for r, c in group if (r, c) not in options]
            if rule.kind == RuleKind.REPEAT_MAX:
                rows += _value_rows(task, rule, options, hidden, fixed)
                continue
            weigh, attribute, items = _weigher(rule), rule.attribute, task.items
            constant = sum(weigh(record[attribute]) for record in fixed)
            coefficients = {cell: {i: weigh(items[i][attribute]) for i in options[cell]} for cell in hidden}
            rows.append(LinearRow(rule.name, rule.is_upper_bound, rule.bound, constant, coefficients))
    return tuple(rows)


def _value_rows(
    task: Task, rule: GlobalRule, options: Mapping[Cell, list[str]], hidden: list[Cell], fixed: list[Any]
) -> list[LinearRow]:
    """A repeat cap's rows over one group: per value its options or visible cells take (in
    ``str`` order), the visible cells that hold it and a 1 for each option that has it (0 for
    the others); each record is read once, not once per value."""
    attribute = rule.attribute
    held: dict[object, int] = {}  # value -> visible cells holding it
    for record in fixed:
        held[record[attribute]] = held.get(record[attribute], 0) + 1
    having: dict[object, dict[Cell, list[str]]] = {}  # value -> cell -> options that have it
    for cell in hidden:
        for i in options[cell]:
            having.setdefault(task.items[i][attribute], {}).setdefault(cell, []).append(i)
    zeros = {cell: dict.fromkeys(options[cell], 0) for cell in hidden}
    rows = []
    for value in sorted(held.keys() | having.keys(), key=str):
        coefficients = {cell: dict(zeros[cell]) for cell in hidden}
        for cell, ids in having.get(value, {}).items():
            for i in ids:
                coefficients[cell][i] = 1
        rows.append(LinearRow(rule.name, rule.is_upper_bound, rule.bound, held.get(value, 0), coefficients))
    return rows


def spreads(rows: list[LinearRow]) -> list[int]:
    """Per row, the widest spread of one cell's coefficients: no option is further than that
    from its cell's most favourable one, so a row with at least that much slack removes none."""
    return [
        max((max(c.values()) - min(c.values()) for c in row.coefficients.values() if c), default=0)
        for row in rows
    ]


def entailed(row: LinearRow) -> bool:
    """Whether ``row`` holds whichever of its options every cell takes (its least favourable
    options still meet the bound): then no domain drawn from those options can break it or lose
    an option to it, and propagation need never look at it. A row with a cell that has no
    option is never entailed (propagation reports that cell's wipe-out)."""
    cells = row.coefficients.values()
    if not all(cells):
        return False
    if row.upper:
        return row.constant + sum(max(c.values()) for c in cells) <= row.bound
    return row.constant + sum(min(c.values()) for c in cells) >= row.bound


def _round(rows: list[LinearRow], domains: dict[Cell, set[str]], spread: list[int]) -> set[tuple[Cell, str]]:
    """The options one round eliminates, judged on the domains at the start of the round
    (``spread``: :func:`spreads` of ``rows``; a row with that much slack is not scanned, and
    the caller leaves out the rows that are :func:`entailed`)."""
    removed: set[tuple[Cell, str]] = set()
    for row, widest in zip(rows, spread, strict=True):
        upper, bound = row.upper, row.bound
        pick = min if upper else max
        best = {cell: pick(map(coef.__getitem__, domains[cell])) for cell, coef in row.coefficients.items()}
        total = row.constant + sum(best.values())
        if (bound - total if upper else total - bound) >= widest:
            continue
        for cell, coef in row.coefficients.items():
            # an option is out when rest + coef[option] breaks the bound: past this value
            edge = bound - (total - best[cell])
            if upper:
                removed.update((cell, option) for option in domains[cell] if coef[option] > edge)
            else:
                removed.update((cell, option) for option in domains[cell] if coef[option] < edge)
    return removed


@dataclass(frozen=True)
class Propagation:
    """Domains after one round and at the fixpoint, and how many rounds that took."""

    after_one_round: dict[Cell, frozenset[str]]
    fixpoint: dict[Cell, frozenset[str]]
    rounds: int

    @property
    def decided(self) -> bool:
        """Whether the fixpoint leaves every hidden cell a single option."""
        return all(len(options) == 1 for options in self.fixpoint.values())


def propagate(task: Task, options: Mapping[Cell, list[str]] | None = None) -> Propagation:
    """Propagate to the fixpoint from ``options`` (default: the locally valid candidates;
    inside :func:`solvers.checker.task_memo`, once per task and options)."""
    if options is None:
        options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    chosen = options
    return remembered("propagate", (task,), options_key(chosen), lambda: _propagate(task, chosen))


def _propagate(task: Task, options: Mapping[Cell, list[str]]) -> Propagation:
    # an entailed row removes nothing in any round (its worst case meets the bound), so the
    # rounds judge only the others: the same removals, round by round
    rows = [row for row in linear_rows(task, options) if not entailed(row)]
    spread = spreads(rows)
    domains = {cell: set(ids) for cell, ids in options.items()}
    first: dict[Cell, frozenset[str]] | None = None
    rounds = 0
    while True:
        removed = _round(rows, domains, spread) if all(domains.values()) else set()
        for cell, option in removed:
            domains[cell].discard(option)
        if removed:
            rounds += 1
        if first is None:
            first = {cell: frozenset(ids) for cell, ids in domains.items()}
        if not removed:
            break
    return Propagation(first, {cell: frozenset(ids) for cell, ids in domains.items()}, rounds)


def decoy_resistance(task: Task, decoys: Mapping[Cell, list[str]]) -> Resistance:
    """Decoys eliminated by one round, by the fixpoint, and the resistant rest."""
    result = propagate(task)
    total = sum(len(ids) for ids in decoys.values())
    one = sum(1 for cell, ids in decoys.items() for i in ids if i not in result.after_one_round[cell])
    fix = sum(1 for cell, ids in decoys.items() for i in ids if i not in result.fixpoint[cell])
    return Resistance(total, one, fix, total - fix, result.rounds, result.decided)
