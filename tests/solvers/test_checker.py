"""The reference checker on hand-built grids: every rule kind, every scope, partial grids."""

from __future__ import annotations

import pytest

from gridbench_core.task import GlobalRule, SlotRule
from solvers.checker import PENDING, SATISFIED, VIOLATED, rule_status, slot_rule_holds

ITEMS = {
    "a": {"cost": 5, "color": "red"},
    "b": {"cost": 3, "color": "red"},
    "c": {"cost": 1, "color": "blue"},
    "d": {"cost": 7, "color": "green"},
}
FULL = [["a", "b"], ["c", "d"]]  # row sums 8, 8; col sums 6, 10; total 16
PARTIAL = [["a", None], ["c", "d"]]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (GlobalRule("s", "sum_max", "cost", 16), SATISFIED),
        (GlobalRule("s", "sum_max", "cost", 15), VIOLATED),
        (GlobalRule("s", "sum_min", "cost", 16), SATISFIED),
        (GlobalRule("s", "sum_min", "cost", 17), VIOLATED),
        (GlobalRule("s", "sum_max", "cost", 8, scope="row"), SATISFIED),
        (GlobalRule("s", "sum_max", "cost", 9, scope="col"), VIOLATED),
        (GlobalRule("s", "sum_min", "cost", 7, scope="col"), VIOLATED),
        (GlobalRule("s", "repeat_max", "color", 2), SATISFIED),
        (GlobalRule("s", "repeat_max", "color", 1), VIOLATED),
        (GlobalRule("s", "repeat_max", "color", 1, scope="col"), SATISFIED),
        (GlobalRule("s", "repeat_max", "color", 1, scope="row"), VIOLATED),
        (GlobalRule("s", "count_min", "color", 2, equals="red"), SATISFIED),
        (GlobalRule("s", "count_min", "color", 3, equals="red"), VIOLATED),
        (GlobalRule("s", "count_min", "color", 1, scope="row", equals="red"), VIOLATED),
        (GlobalRule("s", "count_max", "color", 1, equals="red"), VIOLATED),
        (GlobalRule("s", "count_max", "color", 1, scope="col", equals="red"), SATISFIED),
        (GlobalRule("s", "count_min_threshold", "cost", 2, at_least=5), SATISFIED),
        (GlobalRule("s", "count_min_threshold", "cost", 3, at_least=5), VIOLATED),
        (GlobalRule("s", "count_min_threshold", "cost", 1, scope="row", at_least=5), SATISFIED),
    ],
)
def test_full_grid(rule, expected):
    assert rule_status(rule, FULL, ITEMS) == expected


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (GlobalRule("s", "sum_max", "cost", 13), SATISFIED),  # filled cells sum to 13
        (GlobalRule("s", "sum_max", "cost", 12), VIOLATED),
        (GlobalRule("s", "sum_max", "cost", 7, scope="row"), VIOLATED),  # row 1 is 8
        (GlobalRule("s", "sum_min", "cost", 100), PENDING),
        (GlobalRule("s", "sum_min", "cost", 0), PENDING),
        (GlobalRule("s", "repeat_max", "color", 1), SATISFIED),
        (GlobalRule("s", "count_max", "color", 0, equals="blue"), VIOLATED),
        (GlobalRule("s", "count_min", "color", 5, equals="red"), PENDING),
        (GlobalRule("s", "count_min_threshold", "cost", 9, at_least=1), PENDING),
    ],
)
def test_partial_grid(rule, expected):
    assert rule_status(rule, PARTIAL, ITEMS) == expected


def test_slot_rules():
    item = {"cost": 5, "color": "red"}
    assert slot_rule_holds(SlotRule("cost", "<=", 5), item)
    assert not slot_rule_holds(SlotRule("cost", "<=", 4), item)
    assert slot_rule_holds(SlotRule("cost", ">=", 5), item)
    assert not slot_rule_holds(SlotRule("cost", ">=", 6), item)
    assert slot_rule_holds(SlotRule("color", "in", ("red", "blue")), item)
    assert not slot_rule_holds(SlotRule("color", "not_in", ("red",)), item)
    assert not slot_rule_holds(SlotRule("missing", "<=", 4), item)
