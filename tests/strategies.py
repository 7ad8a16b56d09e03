"""Hypothesis strategies: small random tasks built directly (not by the generator), so the
solver paths are compared with brute force on inputs the generator would never make."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from gridbench_core.task import GlobalRule, Slot, SlotRule, Task
from solvers.checker import rule_groups, rule_measure

COLORS = ("red", "green", "blue")
NUMERIC = ("cost", "weight")


@st.composite
def items(draw, prefix: str) -> dict:
    return {
        "id": prefix,
        "name": f"item {prefix}",
        "cost": draw(st.integers(0, 5)),
        "weight": draw(st.integers(0, 5)),
        "color": draw(st.sampled_from(COLORS)),
    }


@st.composite
def slot_rules(draw) -> tuple[SlotRule, ...]:
    rules = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["<=", ">=", "in", "not_in"]))
        if kind in ("in", "not_in"):
            values = tuple(sorted(draw(st.sets(st.sampled_from(COLORS), min_size=1, max_size=2))))
            rules.append(SlotRule("color", kind, values))
        else:
            value = draw(st.integers(2, 5) if kind == "<=" else st.integers(0, 3))
            rules.append(SlotRule(draw(st.sampled_from(NUMERIC)), kind, value))
    return tuple(rules)


@st.composite
def global_rules(draw, rows: int, cols: int, planted: dict) -> tuple[GlobalRule, ...]:
    """Rules whose bounds sit near a planted grid: mostly met, sometimes by many grids,
    sometimes by one, sometimes by none (delta -1 breaks the planted grid)."""
    rules = []
    for number in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(
                ["sum_max", "sum_min", "repeat_max", "count_min", "count_max", "count_min_threshold"]
            )
        )
        scope = draw(st.sampled_from(["grid", "row", "col", "cells"]))
        region = (
            tuple(sorted(draw(st.sets(st.sampled_from(list(planted)), min_size=1))))
            if scope == "cells"
            else None
        )
        attribute = (
            "color" if kind in ("repeat_max", "count_min", "count_max") else draw(st.sampled_from(NUMERIC))
        )
        equals = draw(st.sampled_from(COLORS)) if kind in ("count_min", "count_max") else None
        at_least = draw(st.integers(0, 5)) if kind == "count_min_threshold" else None
        rule = GlobalRule(f"r{number}", kind, attribute, 0, scope, equals, at_least, region)
        measures = [
            rule_measure(rule, [planted[cell] for cell in group]) for group in rule_groups(rule, rows, cols)
        ]
        delta = draw(st.integers(-1, 2))
        bound = max(measures) + delta if rule.is_upper_bound else min(measures) - delta
        rules.append(rule.with_bound(max(0, bound)))
    return tuple(rules)


@st.composite
def small_tasks(draw) -> Task:
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    cells = list(itertools.product(range(rows), range(cols)))
    hidden = sorted(draw(st.sets(st.sampled_from(cells), min_size=1, max_size=min(4, len(cells)))))
    pool: dict[str, dict] = {}
    grid: list[list[str | None]] = [[None] * cols for _ in range(rows)]
    slots = []
    for r, c in cells:
        if (r, c) in hidden:
            ids = []
            for k in range(draw(st.integers(1, 3))):
                item_id = f"h{r}{c}{k}"
                pool[item_id] = draw(items(item_id))
                ids.append(item_id)
            slots.append(Slot(r, c, tuple(ids), draw(slot_rules())))
        else:
            item_id = f"v{r}{c}"
            pool[item_id] = draw(items(item_id))
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
