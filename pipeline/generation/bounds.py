"""How a bound is drawn so that it says what its rule says and nothing more.

Each bound of a draft is a :class:`Bound`: a *window* (a ``sum_min`` and a ``sum_max`` on the
same attribute and cells) or a *one-sided* rule, with a **radius** R and an **offset** u
(uniform in [0, 1), drawn once). Two tasks are derived from it:

- the **virtual** task: every window is ``[T - R, T + R]`` around the truth's total T, every
  one-sided bound ``T + R`` (a cap) or ``T - R`` (a minimum). Repair and resistance work on it
  only: they decide R from uniqueness, symmetrically, never from where the truth will sit.
- the **shown** task (what ships): a window of width R placed with the truth at offset
  ``k = floor(u (R + 1))`` from its lower side, ``[T - k, T - k + R]``; a one-sided bound
  ``T + k`` (or ``T - k``). R is never cut at T: a lower side may fall below 0, where it
  binds nothing (:func:`radius`). Each shown bound lies inside its virtual one, so the shown task is
  unique whenever the virtual one is; and since u is drawn before anything else and never
  looked at, the truth's position inside every window is uniform on {0, 1/R, ..., 1} and
  independent of everything an agent sees (the width included). Given a window, the truth is
  then distributed inside it exactly as the other completions that pass it are.

A one-sided bound hides its far side, so it can only look like the null (the other
completions that meet it) when its slack is spread over at least the spread of the rule's
measure: its initial radius is ``one_sided_spread`` standard deviations of that measure over
random completions of the draft's candidates, and repair never narrows it (it narrows windows
only: pipeline/generation/repair.py).
"""

from __future__ import annotations

import math

from gridbench_core.task import GlobalRule
from gridbench_core.vocabulary import SUM_KINDS, RuleKind, Scope
from pipeline.generation.draft import Bound, Cell, Draft
from solvers.checker import rule_groups, rule_measure


def measures(draft: Draft, rule: GlobalRule, grid: list[list[str]] | None = None) -> list[int]:
    """The rule's measure on ``grid`` (default: the truth grid), per group of its scope."""
    grid = grid or draft.truth
    return [
        rule_measure(rule, [draft.items[grid[r][c]] for r, c in group])
        for group in rule_groups(rule, draft.rows, draft.cols)
    ]


def value(draft: Draft, bound: Bound, grid: list[list[str]] | None = None) -> int:
    """The measure a bound holds against: a window's total, a cap's largest group, a
    minimum's smallest."""
    found = measures(draft, bound.rules[0], grid)
    return max(found) if bound.upper else min(found)


def radius(bound: Bound, extra: int = 0) -> int:
    """The radius in effect (``extra``: loosened by that many units more). It is never cut at
    the truth's own total T, even where a window's or a minimum's lower side then falls
    below 0, the least a measure can be: cut to min(R, T), a minimum's shown bound was
    uniform on 0..T whenever R >= T, so P(bound | T') = 1 / (T' + 1) favoured the
    completions of smaller counts (an outside audit's likelihood reader: +0.007 [+0.004,
    +0.010] over the far-side reader on 10,917 cells, +0.014 on travel's count minimums).
    Uncut, the offset is uniform on 0..R for every T, and a bound below every completion's
    measure is shown as it was drawn (it binds nothing, and says nothing)."""
    return max(0, bound.radius + extra)  # the bound's alone: nothing of the truth enters it


def virtual_rules(draft: Draft, bound: Bound, extra: int = 0) -> list[GlobalRule]:
    """The bound's rules in the virtual task (``extra``: loosened by that many units more)."""
    truth, width = value(draft, bound), radius(bound, extra)
    return [rule.with_bound(truth + width if rule.is_upper_bound else truth - width) for rule in bound.rules]


def shown_rules(draft: Draft, bound: Bound) -> list[GlobalRule]:
    """The bound's rules as the task shows them: the truth at offset k = floor(u (R + 1))."""
    truth, width = value(draft, bound), radius(bound)
    k = min(width, int(bound.offset * (width + 1)))
    if bound.window:
        low = truth - k
        return [rule.with_bound(low + width if rule.is_upper_bound else low) for rule in bound.rules]
    rule = bound.rules[0]
    return [rule.with_bound(truth + k if bound.upper else truth - k)]


def place(draft: Draft) -> None:
    """Set ``draft.rules`` to the shown rules of every bound, in order."""
    draft.rules = [rule for bound in draft.bounds for rule in shown_rules(draft, bound)]


def virtual(draft: Draft) -> list[GlobalRule]:
    """Every rule of the virtual task, in order."""
    return [rule for bound in draft.bounds for rule in virtual_rules(draft, bound)]


def separation(draft: Draft, bound: Bound, grid: list[list[str]], margin: int) -> int | None:
    """The radius that excludes the completion ``grid`` from this bound's virtual rules (and
    keeps ``margin`` - 1 units of room), or None when no radius does (it meets the bound as
    well as the truth does)."""
    truth, other = value(draft, bound), value(draft, bound, grid)
    if bound.window:
        gap = abs(other - truth)
    else:
        gap = other - truth if bound.upper else truth - other
    if gap <= 0:
        return None
    return max(0, gap - margin)


def short_of(draft: Draft, edge: int, jitter: float) -> int:
    """A window's radius below ``edge``, the widest that excludes the completion that set it:
    uniform in ceil((1 - ``jitter``) x edge)..edge (``edge`` itself at 0), so that the width
    does not say that a completion lies exactly one unit outside the truth's box."""
    low = math.ceil(edge * (1.0 - jitter) - 1e-9)
    return edge if jitter <= 0 or low >= edge else draft.rng.randint(max(low, 0), edge)


def spread(draft: Draft, rule: GlobalRule) -> float:
    """The standard deviation of the rule's measure (in its most variable group) over
    completions that take each hidden cell's truth or one of its decoys at random."""
    best = 0.0
    for group in rule_groups(rule, draft.rows, draft.cols):
        total = 0.0
        for cell in group:
            options = [draft.truth[cell[0]][cell[1]], *draft.decoys.get(cell, [])]
            if len(options) > 1:
                total += _variance(draft, rule, options)
        best = max(best, total)
    return math.sqrt(best)


def _variance(draft: Draft, rule: GlobalRule, options: list[str]) -> float:
    """The variance of one cell's contribution to ``rule`` (for a repeat cap: of its most
    variable value's count)."""
    records = [draft.items[item] for item in options]
    if rule.kind in SUM_KINDS:
        values = [float(int(record[rule.attribute])) for record in records]
    elif rule.kind == RuleKind.REPEAT_MAX:
        shares = [
            sum(record[rule.attribute] == v for record in records) / len(records)
            for v in {record[rule.attribute] for record in records}
        ]
        return max(p * (1 - p) for p in shares)
    else:
        values = [float(rule_measure(rule, [record])) for record in records]
    centre = sum(values) / len(values)
    return sum((v - centre) ** 2 for v in values) / len(values)


def cells_of(bound: Bound) -> tuple[Cell, ...] | None:
    """The cells of a cell-scoped bound (None for other scopes)."""
    rule = bound.rules[0]
    return rule.cells if rule.scope == Scope.CELLS else None
