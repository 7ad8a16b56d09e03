"""Decoy resistance, tested against an independent definition: brute-force supports (the
reference rounds of tests/solvers/test_propagation.py), not propagation itself. Decoys are
every locally valid option that no completion uses."""

from __future__ import annotations

from hypothesis import example, given

from gridbench_core.records import Resistance
from solvers.checker import locally_valid_candidates
from solvers.propagation import decoy_resistance
from tests.brute import completions
from tests.examples import LOOSENING_CAP, ROW_REPEAT, VISIBLE_BREAKS
from tests.solvers.test_propagation import brute_round
from tests.strategies import small_tasks


def brute_resistance(task, decoys) -> Resistance:
    domains = {(s.row, s.col): set(locally_valid_candidates(task, s)) for s in task.slots}
    first, rounds = None, 0
    while True:
        removed = brute_round(task, domains) if all(domains.values()) else set()
        for cell, option in removed:
            domains[cell].discard(option)
        rounds += bool(removed)
        if first is None:
            first = {cell: set(ids) for cell, ids in domains.items()}
        if not removed:
            break
    total = sum(len(ids) for ids in decoys.values())
    one = sum(i not in first[cell] for cell, ids in decoys.items() for i in ids)
    fix = sum(i not in domains[cell] for cell, ids in decoys.items() for i in ids)
    decided = all(len(ids) == 1 for ids in domains.values())
    return Resistance(total, one, fix, total - fix, rounds, decided)


def _decoys(task) -> dict:
    used = {(cell, item) for choice in completions(task) for cell, item in choice.items()}
    return {
        (s.row, s.col): [i for i in locally_valid_candidates(task, s) if ((s.row, s.col), i) not in used]
        for s in task.slots
    }


@example(ROW_REPEAT)
@example(VISIBLE_BREAKS)
@example(LOOSENING_CAP)
@given(small_tasks())
def test_decoy_resistance_matches_brute_force_supports(task):
    decoys = _decoys(task)
    assert decoy_resistance(task, decoys) == brute_resistance(task, decoys)


def test_resistance_on_the_examples_by_hand():
    # round 1: three reds in row 0 refute h0r; round 2: with h0b's cost fixed, h1r breaks the sum
    assert decoy_resistance(ROW_REPEAT, {(0, 2): ["h0r"], (1, 1): ["h1r"]}) == Resistance(2, 1, 2, 0, 2, True)
    assert decoy_resistance(LOOSENING_CAP, {(0, 0): ["a1"], (0, 1): ["b1"]}) == Resistance(
        2, 2, 2, 0, 1, True
    )
