"""The reference checker on its edges: empty groups, thresholds at zero, unknown kinds, what a
valid completion must be, and the enumeration limit."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridbench_core.task import GlobalRule, SlotRule
from solvers.checker import (
    PENDING,
    SATISFIED,
    VIOLATED,
    enumerate_completions,
    group_records,
    is_valid_completion,
    rule_measure,
    rule_status,
    slot_rule_holds,
)
from tests.brute import completions
from tests.tiny import ITEMS, OPEN_TASK, TASK

ROWS = [["V00", None, "V02"], [None, None, None]]  # row 1 is still empty


def test_an_empty_group_has_measure_zero_for_every_kind():
    for rule in (
        GlobalRule("r", "repeat_max", "color", 0),
        GlobalRule("s", "sum_max", "cost", 0),
        GlobalRule("c", "count_max", "color", 0, equals="red"),
        GlobalRule("t", "count_min_threshold", "cost", 0, at_least=0),
    ):
        assert rule_measure(rule, []) == 0


def test_upper_bounds_of_zero_hold_on_empty_rows_only():
    """Nothing placed: row-scoped upper bounds of 0 hold; with row 0 partly filled, they fail."""
    empty = [[None] * 3, [None] * 3]
    for rule in (
        GlobalRule("r", "repeat_max", "color", 0, scope="row"),
        GlobalRule("c", "count_max", "color", 0, scope="row", equals="blue"),
        GlobalRule("s", "sum_max", "cost", 0, scope="row"),
    ):
        assert rule_status(rule, empty, ITEMS) == SATISFIED
        assert rule_status(rule, ROWS, ITEMS) == VIOLATED
    assert rule_status(GlobalRule("r", "repeat_max", "color", 1, scope="row"), ROWS, ITEMS) == SATISFIED


def test_a_threshold_of_zero_counts_every_item():
    rule = GlobalRule("t", "count_min_threshold", "cost", 0, at_least=0)
    records = [ITEMS["G"], ITEMS["V02"]]  # costs 0 and 1
    assert rule_measure(rule, records) == 2
    assert rule_measure(dataclasses.replace(rule, at_least=1), records) == 1
    assert rule_measure(dataclasses.replace(rule, at_least=2), records) == 0


def test_unknown_kinds_and_operators_raise_naming_them():
    with pytest.raises(ValueError, match="unknown slot op '~'"):
        slot_rule_holds(SlotRule("cost", "~", 1), ITEMS["A"])
    with pytest.raises(ValueError, match="unknown rule kind 'median'"):
        rule_measure(GlobalRule("m", "median", "cost", 1), [ITEMS["A"]])


def test_group_records_says_whether_the_group_is_complete():
    group = [(0, 0), (0, 1), (0, 2)]
    records, complete = group_records(ROWS, ITEMS, group)
    assert records == [ITEMS["V00"], ITEMS["V02"]] and complete is False
    records, complete = group_records([["V00", "A", "V02"]], ITEMS, group)
    assert len(records) == 3 and complete is True


def test_a_valid_completion_uses_a_passing_candidate_in_every_hidden_cell():
    truth = {(0, 1): "C", (1, 2): "G"}
    assert is_valid_completion(TASK, truth)
    assert not is_valid_completion(TASK, {(0, 1): "C"})  # a cell left out
    assert not is_valid_completion(TASK, {**truth, (0, 1): "V11"})  # not a candidate of the cell
    loose = dataclasses.replace(TASK, global_constraints=())
    assert is_valid_completion(loose, {(0, 1): "A", (1, 2): "F"})
    assert not is_valid_completion(loose, {(0, 1): "B", (1, 2): "F"})  # B breaks cost <= 4
    assert not is_valid_completion(loose, {(0, 1): "A", (1, 2): "V00"})  # passes, but not offered


def test_rule_status_on_partial_grids_by_kind():
    sum_min = GlobalRule("w", "sum_min", "weight", 0)
    assert rule_status(sum_min, ROWS, ITEMS) == PENDING
    assert rule_status(sum_min, [["V00", "A", "V02"], ["V10", "V11", "E"]], ITEMS) == SATISFIED
    assert rule_status(sum_min, ROWS, ITEMS, complete=True) == SATISFIED  # the caller's word


def test_the_enumeration_stops_at_its_limit():
    every = completions(OPEN_TASK)
    assert len(every) == 3
    assert list(enumerate_completions(OPEN_TASK)) == every
    for limit in (1, 2, 3, 4):
        assert list(enumerate_completions(OPEN_TASK, limit=limit)) == every[:limit]
    assert list(enumerate_completions(TASK, limit=5)) == [{(0, 1): "C", (1, 2): "G"}]


def test_a_region_rule_bounds_its_own_cells_only():
    """A cell-scoped rule (format 2) sums the cells it lists, here the two hidden ones: the
    completions it keeps are exactly those whose two hidden items cost at most 2 together
    (computed here by hand, not by the checker's groups); a grid-wide rule with the same
    bound would keep none (the fixed cells alone cost 10)."""
    region = GlobalRule("cage", "sum_max", "cost", 2, scope="cells", cells=((0, 1), (1, 2)))
    caged = dataclasses.replace(OPEN_TASK, global_constraints=(*OPEN_TASK.global_constraints, region))
    every = list(enumerate_completions(OPEN_TASK))
    kept = [c for c in every if ITEMS[c[(0, 1)]]["cost"] + ITEMS[c[(1, 2)]]["cost"] <= 2]
    assert len(every) == 3 and 0 < len(kept) < len(every)
    assert list(enumerate_completions(caged)) == kept
    assert rule_measure(region, [ITEMS["A"], ITEMS["G"]]) == 3
    whole = dataclasses.replace(region, scope="grid", cells=None)
    assert list(enumerate_completions(dataclasses.replace(OPEN_TASK, global_constraints=(whole,)))) == []
    unlisted = dataclasses.replace(region, cells=None)  # no cells listed: an empty region, measure 0
    assert list(enumerate_completions(dataclasses.replace(OPEN_TASK, global_constraints=(unlisted,)))) != []


def test_slot_violations_lists_exactly_the_rules_an_item_breaks():
    from solvers.checker import slot_violations

    cheap, light, red = (
        SlotRule("cost", "<=", 4),
        SlotRule("weight", ">=", 3),
        SlotRule("color", "in", ("red",)),
    )
    assert slot_violations((cheap, light, red), ITEMS["A"]) == []  # cost 3, weight 4, red
    assert slot_violations((cheap, light, red), ITEMS["B"]) == [cheap, light, red]  # cost 5, weight 1, blue
    assert slot_violations((cheap, light, red), ITEMS["F"]) == [light, red]  # weight 2, green
    assert slot_violations((cheap, light, red), ITEMS["D"]) == [light]  # weight 2
    assert slot_violations((), ITEMS["B"]) == []


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "3"]))


@given(
    st.lists(st.dictionaries(st.sampled_from(["x", "y"]), _VALUES, max_size=2), min_size=1, max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(["x", "y"]),
            st.sampled_from(["<=", ">=", "in", "not_in", "~"]),
            st.integers(-3, 3),
            st.lists(st.sampled_from(["a", "b", "3"]), max_size=2),
        ),
        max_size=3,
    ),
)
def test_the_locally_valid_candidates_are_the_ones_passes_slot_keeps(records, rules):
    """The cell's rules read once (locally_valid_candidates) judge as passes_slot does, item by
    item: a missing or null value, a bool or a string under a numeric rule, membership, and an
    unknown op's refusal wherever passes_slot reaches it."""
    from gridbench_core.task import Slot
    from solvers.checker import _passing, passes_slot

    slot_rules = tuple(
        SlotRule(a, op, tuple(words) if op in ("in", "not_in") else number) for a, op, number, words in rules
    )
    items = {f"I{k}": record for k, record in enumerate(records)}
    slot = Slot(0, 0, tuple(items), slot_rules)

    def reference():  # type: ignore[no-untyped-def]
        return tuple(c for c in slot.candidates if passes_slot(slot, items[c]))

    try:
        expected = reference()
    except ValueError as refusal:
        with pytest.raises(ValueError, match=str(refusal).replace("'", ".")):
            _passing(slot, items)
        return
    assert _passing(slot, items) == expected
