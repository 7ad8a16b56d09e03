"""Hypothesis strategies: small random tasks built directly (not by the generator), so the
solver paths are compared with brute force on inputs the generator would never make."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from gridbench_core.task import GlobalRule, Slot, SlotRule, Task
from solvers.checker import rule_groups, rule_measure

COLORS = ("red", "green", "blue")
NUMERIC = ("cost", "weight")

# The strategies below are built once, here, and drawn from many times: a strategy built inside
# a draw (one per item, with its own arguments) is validated and analysed by Hypothesis at every
# draw, which cost more than the properties these tasks feed. The values drawn are the same.
_LEVEL = st.integers(0, 5)
_COLOR = st.sampled_from(COLORS)
_SLOT_RULE_COUNT = st.integers(0, 2)
_SLOT_RULE_KIND = st.sampled_from(("<=", ">=", "in", "not_in"))
_COLOR_SET = st.sets(_COLOR, min_size=1, max_size=2)
_AT_MOST = st.integers(2, 5)
_AT_LEAST = st.integers(0, 3)
_NUMERIC = st.sampled_from(NUMERIC)
_GLOBAL_RULE_COUNT = st.integers(1, 4)
_GLOBAL_RULE_KIND = st.sampled_from(
    ("sum_max", "sum_min", "repeat_max", "count_min", "count_max", "count_min_threshold")
)
_SCOPE = st.sampled_from(("grid", "row", "col", "cells"))
_THRESHOLD = st.integers(0, 5)
_DELTA = st.integers(-1, 2)


def _item(draw, prefix: str) -> dict:
    return {
        "id": prefix,
        "name": f"item {prefix}",
        "cost": draw(_LEVEL),
        "weight": draw(_LEVEL),
        "color": draw(_COLOR),
    }


def _slot_rules(draw) -> tuple[SlotRule, ...]:
    rules = []
    for _ in range(draw(_SLOT_RULE_COUNT)):
        kind = draw(_SLOT_RULE_KIND)
        if kind in ("in", "not_in"):
            values = tuple(sorted(draw(_COLOR_SET)))
            rules.append(SlotRule("color", kind, values))
        else:
            value = draw(_AT_MOST if kind == "<=" else _AT_LEAST)
            rules.append(SlotRule(draw(_NUMERIC), kind, value))
    return tuple(rules)


@st.composite
def global_rules(draw, rows: int, cols: int, planted: dict) -> tuple[GlobalRule, ...]:
    """Rules whose bounds sit near a planted grid: mostly met, sometimes by many grids,
    sometimes by one, sometimes by none (delta -1 breaks the planted grid)."""
    rules = []
    regions = st.sets(st.sampled_from(tuple(planted)), min_size=1)
    for number in range(draw(_GLOBAL_RULE_COUNT)):
        kind = draw(_GLOBAL_RULE_KIND)
        scope = draw(_SCOPE)
        region = tuple(sorted(draw(regions))) if scope == "cells" else None
        attribute = "color" if kind in ("repeat_max", "count_min", "count_max") else draw(_NUMERIC)
        equals = draw(_COLOR) if kind in ("count_min", "count_max") else None
        at_least = draw(_THRESHOLD) if kind == "count_min_threshold" else None
        rule = GlobalRule(f"r{number}", kind, attribute, 0, scope, equals, at_least, region)
        measures = [
            rule_measure(rule, [planted[cell] for cell in group]) for group in rule_groups(rule, rows, cols)
        ]
        delta = draw(_DELTA)
        bound = max(measures) + delta if rule.is_upper_bound else min(measures) - delta
        rules.append(rule.with_bound(max(0, bound)))
    return tuple(rules)


@st.composite
def small_tasks(draw) -> Task:
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    cells = list(itertools.product(range(rows), range(cols)))
    hidden = sorted(draw(st.sets(st.sampled_from(tuple(cells)), min_size=1, max_size=min(4, len(cells)))))
    pool: dict[str, dict] = {}
    grid: list[list[str | None]] = [[None] * cols for _ in range(rows)]
    slots = []
    for r, c in cells:
        if (r, c) in hidden:
            ids = []
            for k in range(draw(st.integers(1, 3))):
                item_id = f"h{r}{c}{k}"
                pool[item_id] = _item(draw, item_id)
                ids.append(item_id)
            slots.append(Slot(r, c, tuple(ids), _slot_rules(draw)))
        else:
            item_id = f"v{r}{c}"
            pool[item_id] = _item(draw, item_id)
            grid[r][c] = item_id
    planted = {
        (r, c): pool[
            grid[r][c] or draw(st.sampled_from(next(s.candidates for s in slots if (s.row, s.col) == (r, c))))
        ]
        for r, c in cells
    }
    return Task(
        "prop",
        "toy",
        rows,
        cols,
        0,
        tuple(tuple(row) for row in grid),
        pool,
        tuple(slots),
        draw(global_rules(rows, cols, planted)),
    )
