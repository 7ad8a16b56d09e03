"""The reference checker, CP-SAT and CBC agree with brute force on small random tasks."""

from __future__ import annotations

from hypothesis import given

from solvers.cbc import CbcModel
from solvers.checker import is_valid_completion, locally_valid_candidates
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE
from tests.brute import all_choices, completions, distance
from tests.strategies import small_tasks


@given(small_tasks())
def test_cpsat_feasibility_matches_brute_force(task):
    found = completions(task)
    result = CpSatModel(task).solve([])
    assert result.status == (FEASIBLE if found else INFEASIBLE)
    if found:
        assert is_valid_completion(task, result.solution)


@given(small_tasks())
def test_uniqueness_agrees_across_cpsat_cbc_and_brute_force(task):
    found = completions(task)
    if not found:
        return
    truth = found[0]
    unique = len(found) == 1
    cpsat = CpSatModel(task, truth=truth)
    other = cpsat.other_completion()
    assert other.status == (INFEASIBLE if unique else FEASIBLE)
    if not unique:
        assert other.solution != truth and is_valid_completion(task, other.solution)
    cbc = CbcModel(task)
    assert cbc.truth_feasible(truth).status == FEASIBLE
    cbc_other = cbc.other_completion(truth)
    assert cbc_other.status == (INFEASIBLE if unique else FEASIBLE)
    if not unique:
        assert cbc_other.solution != truth and is_valid_completion(task, cbc_other.solution)


@given(small_tasks())
def test_item_feasibility_and_most_decoys_match_brute_force(task):
    found = completions(task)
    model = CpSatModel(task)
    for slot in task.slots:
        cell = (slot.row, slot.col)
        for item_id in slot.candidates:
            in_some = any(choice[cell] == item_id for choice in found)
            assert model.item_feasible(cell, item_id).status == (FEASIBLE if in_some
                                                                 else INFEASIBLE)
    if not found:
        return
    truth = found[0]
    others = {(s.row, s.col): [i for i in locally_valid_candidates(task, s)
                               if i != truth[(s.row, s.col)]] for s in task.slots}  # fmt: skip
    most = CbcModel(task).most_decoys(others)
    expected = max(sum(choice[c] != truth[c] for c in choice) for choice in found)
    assert most.status == FEASIBLE and most.objective == expected


@given(small_tasks())
def test_distance_to_ambiguity_matches_brute_force(task):
    found = completions(task)
    if len(found) != 1:
        return
    truth = found[0]
    model = CpSatModel(task, truth=truth)
    for rule in task.global_constraints:
        result = model.loosening_to_ambiguity(rule.name)
        expected = distance(task, truth, rule.name)
        if expected is None:
            assert result.status == INFEASIBLE
        else:
            assert result.status == FEASIBLE and result.objective == expected


@given(small_tasks())
def test_brute_force_enumeration_is_complete(task):
    """The checker's own enumeration agrees with the test's independent product loop."""
    from solvers.checker import enumerate_completions

    listed = list(enumerate_completions(task))
    assert listed == completions(task)
    assert len(list(all_choices(task))) >= len(listed)
