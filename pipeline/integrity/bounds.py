"""Where the truth sits inside the bounds an agent reads, against a null of other completions.

Every bound of a task is read per rule group: a *window* (a ``sum_min`` and a ``sum_max`` on
the same attribute and the same cells, grid- or cell-scoped) gives the truth's *position*
``(T - lo) / (hi - lo)``; a *one-sided* rule gives whether the truth sits exactly *at the
bound* (in the group where it is tightest). The *null* is a completion drawn uniformly from
the locally valid candidates of every hidden cell, conditioned on passing the same rule: its
position (exactly, by convolution of the cells' value distributions) or its chance to sit at
the bound (by sampling). A generator whose bounds say what the rules say and nothing more
puts the truth's positions where the null puts them: uniform in aggregate, and at a one-sided
bound no more often than a passing completion would be.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gridbench_core.lazy import lazy_module
from gridbench_core.task import Answer, GlobalRule, Task
from gridbench_core.vocabulary import SUM_KINDS, RuleKind, Scope
from solvers.checker import locally_valid_candidates, rule_groups, rule_measure

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded at the first audit

Cell = tuple[int, int]
BINS = 5  # the position histogram's bins over [0, 1]
SAMPLES = 400  # random completions per task for the one-sided null


@dataclass(frozen=True)
class Window:
    """A two-sided bound on one group: ``lo <= sum <= hi``, and the truth's total."""

    kind: str  # "grid" or "cells"
    attribute: str
    names: tuple[str, str]
    group: tuple[Cell, ...]
    lo: int
    hi: int
    truth: int

    @property
    def width(self) -> int:
        """``hi - lo`` (0: the window names one total)."""
        return self.hi - self.lo

    def position(self, total: float) -> float:
        """Where ``total`` sits in the window, 0 at ``lo`` and 1 at ``hi``."""
        return (total - self.lo) / self.width if self.width else 0.5


def windows(task: Task, answer: Answer | None = None) -> list[Window]:
    """Every window of ``task``: each ``sum_min`` paired with the ``sum_max`` on the same
    attribute, scope and cells (grid or cells scope); ``truth`` is the truth's total when
    ``answer`` is given (else the visible cells' total)."""
    maxima = {
        (rule.attribute, rule.scope, rule.cells): rule
        for rule in task.global_constraints
        if rule.kind == RuleKind.SUM_MAX and rule.scope in (Scope.GRID, Scope.CELLS)
    }
    out = []
    for rule in task.global_constraints:
        upper = maxima.get((rule.attribute, rule.scope, rule.cells))
        if rule.kind != RuleKind.SUM_MIN or upper is None:
            continue
        group = rule_groups(rule, task.rows, task.cols)[0]
        truth = _group_total(task, group, rule.attribute, answer.truth_choice() if answer else None)
        out.append(
            Window(
                str(rule.scope),
                rule.attribute,
                (rule.name, upper.name),
                group,
                rule.bound,
                upper.bound,
                truth,
            )
        )
    return out


def one_sided(task: Task) -> list[GlobalRule]:
    """The rules that are not a side of a window."""
    paired = {name for window in windows(task) for name in window.names}
    return [rule for rule in task.global_constraints if rule.name not in paired]


def rule_label(rule: GlobalRule) -> str:
    """The kind a one-sided rule is reported under, e.g. ``sum_max/row`` or ``repeat_max``."""
    return f"{rule.kind}/{rule.scope}" if rule.kind in SUM_KINDS else str(rule.kind)


def _group_total(
    task: Task, group: Iterable[Cell], attribute: str, choice: dict[Cell, str] | None = None
) -> int:
    total = 0
    for row, col in group:
        item = task.grid[row][col] if task.grid[row][col] is not None else (choice or {}).get((row, col))
        total += int(task.items[str(item)][attribute]) if item is not None else 0
    return total


def options_of(task: Task) -> dict[Cell, list[str]]:
    """Each hidden cell's locally valid candidates."""
    return {(slot.row, slot.col): locally_valid_candidates(task, slot) for slot in task.slots}


def total_pmf(task: Task, window: Window, options: dict[Cell, list[str]]) -> tuple[int, np.ndarray]:
    """The distribution of the window's total over uniform random completions: (the smallest
    total, probabilities of each total from there on)."""
    constant, pmf = 0, np.ones(1)
    for cell in window.group:
        fixed = task.grid[cell[0]][cell[1]]
        if fixed is not None:
            constant += int(task.items[fixed][window.attribute])
            continue
        values = [int(task.items[item][window.attribute]) for item in options[cell]]
        low = min(values)
        own = np.zeros(max(values) - low + 1)
        for value in values:
            own[value - low] += 1.0 / len(values)
        constant += low
        pmf = np.convolve(pmf, own)
    return constant, pmf


def null_bins(task: Task, window: Window, options: dict[Cell, list[str]]) -> list[float] | None:
    """The chance that a completion passing ``window`` falls in each position bin (None when
    no completion passes, or the window has no width)."""
    if window.width <= 0:
        return None
    start, pmf = total_pmf(task, window, options)
    low, high = max(window.lo - start, 0), min(window.hi - start, len(pmf) - 1)
    if high < low:
        return None
    totals = np.arange(low, high + 1) + start
    mass = pmf[low : high + 1]
    if mass.sum() <= 0:
        return None
    bins = np.minimum(((totals - window.lo) / window.width * BINS).astype(int), BINS - 1)
    out = np.bincount(bins, weights=mass, minlength=BINS)
    return [float(v) for v in out / mass.sum()]


def position_bin(position: float) -> int:
    """The histogram bin of a position in [0, 1]."""
    return min(int(position * BINS), BINS - 1)


def _measure(task: Task, rule: GlobalRule, grid: list[list[str | None]]) -> int:
    measures = [
        rule_measure(rule, [task.items[str(grid[r][c])] for r, c in group])
        for group in rule_groups(rule, task.rows, task.cols)
    ]
    return max(measures) if rule.is_upper_bound else min(measures)


def _weight(rule: GlobalRule, record: dict, equals: object) -> int:
    value = record[rule.attribute]
    if rule.kind in SUM_KINDS:
        return int(value)
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        return int(int(value) >= int(rule.at_least or 0))
    return int(value == equals)


def _weights(rule: GlobalRule, records: list[Any], row_of: dict[object, int] | None) -> np.ndarray:
    """Each record's weight in each of the rule's rows: one row (``row_of`` None), or a row per
    value of a repeat cap (``row_of``: each value's row), where a record counts in its own."""
    if row_of is None:
        return np.array([[_weight(rule, r, rule.equals) for r in records]], dtype=np.int64)
    out = np.zeros((len(row_of), len(records)), dtype=np.int64)
    out[[row_of[r[rule.attribute]] for r in records], np.arange(len(records))] = 1
    return out


def _sampled_measure(
    task: Task, rule: GlobalRule, options: dict[Cell, list[str]], picks: dict[Cell, np.ndarray]
) -> np.ndarray:
    """The rule's measure (its tightest group) over the sampled completions ``picks``: per
    group, each counted value's total (a row; one row unless the rule caps repeats), each open
    cell adding the weights of its picked options, then the largest row."""
    per_group = []
    for group in rule_groups(rule, task.rows, task.cols):
        records = {cell: [task.items[i] for i in options[cell]] for cell in group if cell in options}
        fixed = [task.items[str(task.grid[r][c])] for r, c in group if (r, c) not in options]
        row_of: dict[object, int] | None = None  # one row, unless the rule caps repeats: a row per value
        if rule.kind == RuleKind.REPEAT_MAX:
            values = sorted(
                {r[rule.attribute] for r in fixed}
                | {r[rule.attribute] for rs in records.values() for r in rs},
                key=str,
            )
            row_of = {value: k for k, value in enumerate(values)}
        totals = np.repeat(_weights(rule, fixed, row_of).sum(axis=1, keepdims=True), SAMPLES, axis=1)
        for cell, rows in records.items():
            totals += _weights(rule, rows, row_of)[:, picks[cell]]
        per_group.append(totals.max(axis=0) if len(totals) else np.zeros(SAMPLES, dtype=np.int64))
    stacked = np.array(per_group)
    return stacked.max(axis=0) if rule.is_upper_bound else stacked.min(axis=0)


def at_bound_null(
    task: Task, rules: list[GlobalRule], options: dict[Cell, list[str]], rng: random.Random | int
) -> dict[str, float | None]:
    """Per one-sided rule, the chance that a random completion passing it sits exactly at its
    bound (over :data:`SAMPLES` completions; None when no sample passes). The samples are
    seeded by ``rng``'s next 64 bits, or by ``rng`` itself when it is that number."""
    draw = np.random.default_rng(rng if isinstance(rng, int) else rng.getrandbits(64))
    picks = {cell: draw.integers(0, len(ids), size=SAMPLES) for cell, ids in sorted(options.items())}
    out: dict[str, float | None] = {}
    for rule in rules:
        measure = _sampled_measure(task, rule, options, picks)
        passing = measure <= rule.bound if rule.is_upper_bound else measure >= rule.bound
        count = int(passing.sum())
        out[rule.name] = float((passing & (measure == rule.bound)).sum()) / count if count else None
    return out


def truth_at_bound(task: Task, answer: Answer, rule: GlobalRule) -> bool:
    """Whether the truth meets a one-sided rule with no slack (in its tightest group)."""
    grid: list[list[str | None]] = [list(row) for row in answer.truth]
    return _measure(task, rule, grid) == rule.bound


def departure(observed: list[int], expected: list[float]) -> list[dict[str, float]]:
    """Per bin: the observed share, the null's, their difference and its 95% half-width
    (``observed``: counts; ``expected``: the null's expected counts)."""
    n = sum(observed)
    out = []
    for count, mass in zip(observed, expected, strict=True):
        share, null = (count / n, mass / n) if n else (math.nan, math.nan)
        half = 1.96 * math.sqrt(max(null * (1 - null), 1e-12) / max(n, 1))
        out.append({"share": share, "null": null, "diff": share - null, "half": half})
    return out
