"""Soft heuristics: readers of the bounds that use no sound reasoning, scored against a control.

A soft heuristic picks, in each open cell, the option that puts the rules' totals where it
believes the truth sits (the middle of a window, near an edge, the least or most of a bound
used, the most typical values), counting the other open cells at their options' mean. It is
scored per cell and per task, over all options (slot checks) and over the options the
fixpoint and probing rungs of the reasoning ladder leave, and the same on a *control copy*:
the same tasks with every window re-placed so the truth's position inside it is uniform (same
candidates, same widths). Some lift over chance is the rules' own information, used by
expectation, and the control has it too; a lift over the *control* is a tell in how the
bounds were drawn. Regions: among the combinations of a cage's cells that meet the cage's own
windows, the one closest to (or farthest from) the windows' middles.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Callable

from gridbench_core.task import Answer, Task
from gridbench_core.vocabulary import SUM_KINDS, Scope
from pipeline.integrity.bounds import Cell, Window, options_of, windows
from solvers.checker import rule_groups
from solvers.ladder import FIXPOINT, PROBING, SLOT, rung_domains

RUNG_NAMES = {SLOT: "all options", FIXPOINT: "after the fixpoint", PROBING: "after probing"}
REGION_LIMIT = 20_000  # combinations of one cage enumerated at most
Domains = dict[Cell, list[str]]


def control_copy(task: Task, answer: Answer, rng: random.Random) -> Task:
    """``task`` with every window re-placed around the truth at a uniform position, keeping
    its width (lo = T - k, k uniform in 0..width); one-sided rules unchanged."""
    rules = {rule.name: rule for rule in task.global_constraints}
    for window in windows(task, answer):
        low = window.truth - rng.randint(0, window.width)
        rules[window.names[0]] = rules[window.names[0]].with_bound(low)
        rules[window.names[1]] = rules[window.names[1]].with_bound(low + window.width)
    return dataclasses.replace(task, global_constraints=tuple(rules[r.name] for r in task.global_constraints))


@dataclasses.dataclass(frozen=True)
class _Sum:
    """A sum rule group as a heuristic reads it: the cells, the attribute, its bounds."""

    cells: tuple[Cell, ...]
    attribute: str
    lo: int | None
    hi: int | None


def _sums(task: Task) -> list[_Sum]:
    """Windows, and one-sided sum rules per group."""
    out = [_Sum(w.group, w.attribute, w.lo, w.hi) for w in windows(task)]
    paired = {name for w in windows(task) for name in w.names}
    for rule in task.global_constraints:
        if rule.kind not in SUM_KINDS or rule.name in paired:
            continue
        for group in rule_groups(rule, task.rows, task.cols):
            upper = rule.is_upper_bound
            out.append(
                _Sum(group, rule.attribute, None if upper else rule.bound, rule.bound if upper else None)
            )
    return out


Score = Callable[[float, _Sum], float]  # (expected total, the sum) -> badness (the least wins)


def _middle(total: float, rule: _Sum) -> float:
    if rule.lo is None or rule.hi is None:
        return 0.0
    return abs(total - (rule.lo + rule.hi) / 2) / max(rule.hi - rule.lo, 1)


def _used(total: float, rule: _Sum) -> float:
    if rule.lo is not None and rule.hi is not None:
        return (total - rule.lo) / max(rule.hi - rule.lo, 1)
    if rule.hi is not None:
        return total / max(rule.hi, 1)
    return (rule.lo or 0) / max(total, 1.0)


def _bound(total: float, rule: _Sum) -> float:
    if rule.lo is not None and rule.hi is not None:
        return min(abs(total - rule.lo), abs(total - rule.hi)) / max(rule.hi - rule.lo, 1)
    edge = rule.hi if rule.hi is not None else rule.lo or 0
    return abs(total - edge) / max(abs(edge), 1)


HEURISTICS: dict[str, Score] = {
    "closest_to_middle": _middle,
    "farthest_from_middle": lambda total, rule: -_middle(total, rule),
    "least_slack_used": _used,
    "most_slack_used": lambda total, rule: -_used(total, rule),
    "closest_to_a_bound": _bound,
}


def _value(task: Task, item: str, attribute: str) -> int:
    return int(task.items[item][attribute])


def sum_picks(task: Task, domains: Domains, score: Score) -> dict[Cell, str]:
    """Per open cell, the option whose expected totals ``score`` likes best (other open cells
    at their options' mean, decided cells at their option)."""
    return _picks_from(_expected_totals(task, domains), domains, score)


# Per sum rule: for each open cell of its group, each option with the group's expected total
# when the cell takes it (the other cells at their options' mean).
Totals = list[tuple[_Sum, list[tuple[Cell, list[tuple[str, float]]]]]]


def _expected_totals(task: Task, domains: Domains) -> Totals:
    out: Totals = []
    for rule in _sums(task):
        means: dict[Cell, float] = {}
        total = 0.0
        for cell in rule.cells:
            fixed = task.grid[cell[0]][cell[1]]
            options = [fixed] if fixed is not None else domains[cell]
            means[cell] = sum(_value(task, item, rule.attribute) for item in options) / len(options)
            total += means[cell]
        entries = []
        for cell in rule.cells:
            if cell not in domains or len(domains[cell]) < 2 or task.grid[cell[0]][cell[1]] is not None:
                continue
            rest = total - means[cell]
            entries.append(
                (cell, [(o, rest + _value(task, o, rule.attribute)) for o in dict.fromkeys(domains[cell])])
            )
        out.append((rule, entries))
    return out


def _picks_from(totals: Totals, domains: Domains, score: Score) -> dict[Cell, str]:
    badness: dict[Cell, dict[str, float]] = {
        cell: dict.fromkeys(options, 0.0) for cell, options in domains.items() if len(options) > 1
    }
    for rule, entries in totals:
        for cell, options in entries:
            scores = badness[cell]
            for option, expected in options:
                scores[option] += score(expected, rule)
    return {cell: min(domains[cell], key=lambda o: (scores[o], o)) for cell, scores in badness.items()}


def typical_picks(task: Task, domains: Domains) -> dict[Cell, str]:
    """Per open cell, the option closest to its options' mean on every numeric attribute
    (scaled by their spread): the "most typical value"."""
    picks = {}
    for cell, options in domains.items():
        if len(options) < 2:
            continue
        names = [
            k for k, v in task.items[options[0]].items() if isinstance(v, int) and k not in ("id", "name")
        ]
        badness = dict.fromkeys(options, 0.0)
        for name in names:
            values = [_value(task, o, name) for o in options]
            centre, spread = sum(values) / len(values), (max(values) - min(values)) or 1
            for option, value in zip(options, values, strict=True):
                badness[option] += abs(value - centre) / spread
        picks[cell] = min(options, key=lambda o: (badness[o], o))
    return picks


def all_picks(task: Task, domains: Domains) -> dict[str, dict[Cell, str]]:
    """Every soft heuristic's picks on ``domains``."""
    totals = _expected_totals(task, domains)  # the same for every heuristic
    out = {name: _picks_from(totals, domains, score) for name, score in HEURISTICS.items()}
    out["most_typical_value"] = typical_picks(task, domains)
    return out


def rung_options(task: Task, rungs: tuple[int, ...] = tuple(RUNG_NAMES)) -> dict[int, Domains]:
    """The options each of ``rungs`` leaves (slot checks, fixpoint, probing), in listed order."""
    listed = options_of(task)
    if rungs == (SLOT,):
        return {SLOT: listed}
    stages = rung_domains(task)
    return {
        rung: {cell: [i for i in listed[cell] if i in stages[rung][cell]] for cell in listed}
        for rung in rungs
    }


def cages(task: Task, answer: Answer | None = None) -> dict[tuple[Cell, ...], list[Window]]:
    """The cell-scoped windows of ``task``, by the cells they bound."""
    out: dict[tuple[Cell, ...], list[Window]] = {}
    for window in windows(task, answer):
        if window.kind == Scope.CELLS:
            out.setdefault(window.group, []).append(window)
    return out


def region_combinations(
    task: Task, group: tuple[Cell, ...], own: list[Window]
) -> list[dict[Cell, str]] | None:
    """The combinations of the group's hidden cells (locally valid options) that meet the
    group's own windows; None when there are more than :data:`REGION_LIMIT` to try."""
    options = options_of(task)
    hidden = [cell for cell in group if cell in options]
    if math.prod(len(options[cell]) for cell in hidden) > REGION_LIMIT:
        return None
    out = []
    for combo in itertools.product(*(options[cell] for cell in hidden)):
        choice = dict(zip(hidden, combo, strict=True))
        if all(_meets(task, window, choice) for window in own):
            out.append(choice)
    return out


def _meets(task: Task, window: Window, choice: dict[Cell, str]) -> bool:
    total = 0
    for row, col in window.group:
        item = task.grid[row][col] or choice[(row, col)]
        total += _value(task, item, window.attribute)
    return window.lo <= total <= window.hi


def region_pick(task: Task, own: list[Window], combos: list[dict[Cell, str]], sign: float) -> dict[Cell, str]:
    """The combination closest to (``sign`` 1) or farthest from (-1) the windows' middles."""

    def distance(choice: dict[Cell, str]) -> float:
        total = 0.0
        for window in own:
            value = sum(
                _value(task, task.grid[r][c] or choice[(r, c)], window.attribute) for r, c in window.group
            )
            total += abs(value - (window.lo + window.hi) / 2) / max(window.width, 1)
        return sign * total

    return min(combos, key=lambda choice: (distance(choice), sorted(choice.items())))


def region_cage_decided_alone(task: Task) -> tuple[int, int]:
    """(cages whose own windows leave one combination of their cells, cages counted)."""
    alone = counted = 0
    for group, own in cages(task).items():
        combos = region_combinations(task, group, own)
        counted += 1
        alone += combos is not None and len(combos) == 1
    return alone, counted


__all__ = [
    "HEURISTICS",
    "RUNG_NAMES",
    "all_picks",
    "cages",
    "control_copy",
    "region_cage_decided_alone",
    "region_combinations",
    "region_pick",
    "rung_options",
]
