"""The reference checker, CP-SAT and the MILP cross-check (HiGHS and CBC) agree with brute
force on small random tasks."""

from __future__ import annotations

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from solvers.checker import is_valid_completion, locally_valid_candidates
from solvers.cpsat import CpSatModel
from solvers.milp import MILP_SOLVERS, MilpModel, crosscheck
from solvers.results import FEASIBLE, INFEASIBLE
from tests.brute import all_choices, completions, distance
from tests.examples import (
    BOUNDARY,
    CASED,
    LOOSENING_CAP,
    LOWER_LOOSENING,
    NO_OPTION,
    ROW_REPEAT,
    THRESHOLD_ZERO,
    VISIBLE_BREAKS,
)
from tests.strategies import small_tasks


@example(ROW_REPEAT)
@example(VISIBLE_BREAKS)
@example(BOUNDARY)
@example(THRESHOLD_ZERO)
@example(CASED)
@given(small_tasks())
def test_cpsat_feasibility_matches_brute_force(task):
    found = completions(task)
    result = CpSatModel(task).solve([])
    assert result.status == (FEASIBLE if found else INFEASIBLE)
    if found:
        assert is_valid_completion(task, result.solution)


@example(task=ROW_REPEAT)
@example(task=LOOSENING_CAP)
@example(task=BOUNDARY)
@pytest.mark.parametrize("solver", MILP_SOLVERS)
@given(task=small_tasks())
def test_uniqueness_agrees_across_cpsat_milp_and_brute_force(solver, task):
    found = completions(task)
    if not found:
        return
    truth = found[0]
    unique = len(found) == 1
    cpsat = CpSatModel(task, truth=truth)
    # the certificate asks with ``proof=True`` (presolve without probing): the same verdict
    for other in (cpsat.other_completion(), cpsat.other_completion(proof=True)):
        assert other.status == (INFEASIBLE if unique else FEASIBLE)
        if not unique:
            assert other.solution != truth and is_valid_completion(task, other.solution)
    cbc = MilpModel(task, solver=solver)
    assert cbc.truth_feasible(truth).status == FEASIBLE
    cbc_other = cbc.other_completion(truth)
    assert cbc_other.status == (INFEASIBLE if unique else FEASIBLE)
    if not unique:
        assert cbc_other.solution != truth and is_valid_completion(task, cbc_other.solution)


@example(task=VISIBLE_BREAKS)  # the visible cells alone break repeat_max: no completion
@example(task=NO_OPTION)  # a hidden cell with no option: no column at all
@example(task=ROW_REPEAT)
@example(task=BOUNDARY)
@example(task=CASED)
@pytest.mark.parametrize("solver", MILP_SOLVERS)
@given(task=small_tasks())
def test_milp_finds_a_choice_feasible_exactly_when_it_is_a_completion(solver, task):
    """The MILP's own semantics against the checker's: a completion exists exactly when brute
    force finds one (a task whose visible cells alone break a rule has none), and fixing the
    hidden cells to a choice is feasible exactly when that choice is a completion."""
    import itertools

    found = completions(task)
    model = MilpModel(task, solver=solver)
    assert model.most_decoys({}).status == (FEASIBLE if found else INFEASIBLE)
    for choice in itertools.islice(all_choices(task), 8):
        expected = FEASIBLE if is_valid_completion(task, choice) else INFEASIBLE
        assert model.truth_feasible(choice).status == expected, choice


@example(task=ROW_REPEAT)
@example(task=VISIBLE_BREAKS)
@example(task=BOUNDARY)
@example(task=THRESHOLD_ZERO)
@pytest.mark.parametrize("solver", MILP_SOLVERS)
@given(task=small_tasks())
def test_item_feasibility_and_most_decoys_match_brute_force(solver, task):
    found = completions(task)
    model = CpSatModel(task)
    for slot in task.slots:
        cell = (slot.row, slot.col)
        for item_id in slot.candidates:
            in_some = any(choice[cell] == item_id for choice in found)
            assert model.item_feasible(cell, item_id).status == (FEASIBLE if in_some else INFEASIBLE)
    if not found:
        return
    truth = found[0]
    others = {
        (s.row, s.col): [i for i in locally_valid_candidates(task, s) if i != truth[(s.row, s.col)]]
        for s in task.slots
    }
    most = MilpModel(task, solver=solver).most_decoys(others)
    expected = max(sum(choice[c] != truth[c] for c in choice) for choice in found)
    assert most.status == FEASIBLE and most.objective == expected


@example(ROW_REPEAT)
@example(VISIBLE_BREAKS)
@given(small_tasks())
def test_one_solve_refutes_a_set_of_items_exactly_when_brute_force_does(task):
    """``some_feasible`` (the single decoy proof of the certificate) is INFEASIBLE exactly when
    no completion uses any of the items, and stays usable for later proofs."""
    found = completions(task)
    model = CpSatModel(task)
    items = [((s.row, s.col), i) for s in task.slots for i in s.candidates][::2]
    used = any(choice[cell] == item for choice in found for cell, item in items)
    assert model.some_feasible(items).status == (FEASIBLE if used else INFEASIBLE)
    assert model.solve([]).status == (FEASIBLE if found else INFEASIBLE)


@example(LOOSENING_CAP)
@example(ROW_REPEAT)
@example(LOWER_LOOSENING)
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


@example(LOOSENING_CAP)
@example(ROW_REPEAT)
@example(LOWER_LOOSENING)
@given(small_tasks())
def test_least_loosening_in_one_solve_matches_the_brute_force_minimum(task):
    from gridbench_core.task import Answer, SlotRoles
    from pipeline.generation.measures import distance_to_ambiguity

    found = completions(task)
    if len(found) != 1:
        return
    truth = found[0]
    per_rule = [distance(task, truth, rule.name) for rule in task.global_constraints]
    finite = [units for units in per_rule if units is not None]
    result = CpSatModel(task, truth=truth).least_loosening_to_ambiguity()
    if not finite:
        assert result.status == INFEASIBLE
        return
    assert result.status == FEASIBLE and result.objective == min(finite)
    grid = [[truth.get((r, c), task.grid[r][c]) for c in range(task.cols)] for r in range(task.rows)]
    roles = tuple(SlotRoles(s.row, s.col, truth[(s.row, s.col)], (), ()) for s in task.slots)
    record = distance_to_ambiguity(task, Answer(task.task_id, grid, roles), None)
    assert record.units == min(finite)
    named = [
        rule.name
        for rule, units in zip(task.global_constraints, per_rule, strict=True)
        if units == min(finite)
    ]
    assert min(finite) == 0 or record.rule in named


@example(ROW_REPEAT)
@example(VISIBLE_BREAKS)
@given(small_tasks())
def test_brute_force_enumeration_is_complete(task):
    """The checker's own enumeration agrees with the test's independent product loop."""
    from solvers.checker import enumerate_completions

    listed = list(enumerate_completions(task))
    assert listed == completions(task)
    assert len(list(all_choices(task))) >= len(listed)


@pytest.mark.parametrize("solver", MILP_SOLVERS)
@example(task=BOUNDARY, pick=0, drop=-1)  # two completions: never ok, a counterexample
@example(task=BOUNDARY, pick=1, drop=0)  # the other one called the truth, a decoy left out
@example(task=THRESHOLD_ZERO, pick=0, drop=0)  # one hidden cell, its decoy list incomplete
@example(task=ROW_REPEAT, pick=0, drop=-1)  # unique: the one-solve proof
@example(task=ROW_REPEAT, pick=0, drop=1)  # unique, a decoy left out: three solves
@given(task=small_tasks(), pick=st.integers(0, 7), drop=st.integers(-1, 7))
def test_crosscheck_verdict_matches_brute_force(solver, task, pick, drop):
    """The cross-check's verdict (one solve when the answer's decoys are the model's other
    options, three otherwise) is exactly brute force's, whichever completion is called the
    truth (``pick``) and whether or not the decoy list is complete (``drop`` >= 0 leaves the
    first decoy of one cell out)."""
    found = completions(task)
    if not found:
        return
    truth = found[pick % len(found)]
    valid = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    decoys = {cell: [i for i in ids if i != truth[cell]] for cell, ids in valid.items()}
    if drop >= 0:  # an incomplete decoy list: the one-solve proof does not apply
        cell = sorted(decoys)[drop % len(decoys)]
        decoys[cell] = decoys[cell][1:]
    check = crosscheck(task, truth, {c: ids for c, ids in decoys.items() if ids}, solver=solver)
    unique = len(found) == 1
    used = max(sum(choice[c] in decoys[c] for c in choice) for choice in found)
    assert check.truth_feasible
    assert check.unique == unique
    assert check.most_decoys_used == used
    assert check.decoys_infeasible == (used == 0)
    assert check.ok == (unique and used == 0)
    if not unique:
        assert check.counterexample is not None


@settings(max_examples=400, deadline=None)
@given(small_tasks(), st.randoms(use_true_random=False))
def test_one_unit_witnesses_settle_exactly_the_brute_force_distance_one(task, rng):
    """Offered every other completion as witnesses (in any order; repair offers the
    counterexamples it met), a witness settles the distance exactly when the brute-force
    minimum is one unit, and its rule is a minimiser; what is not a completion of the task is
    skipped."""
    from gridbench_core.task import Answer, SlotRoles
    from pipeline.generation.measures import distance_to_ambiguity, one_unit_witness

    found = completions(task)
    if len(found) != 1:
        return
    truth = found[0]
    witnesses: list[dict] = [choice for choice in all_choices(task) if choice != truth]
    rng.shuffle(witnesses)
    witnesses.insert(0, {(-1, -1): "not-a-cell"})
    per_rule = {rule.name: distance(task, truth, rule.name) for rule in task.global_constraints}
    finite = [units for units in per_rule.values() if units is not None]
    rule = one_unit_witness(task, witnesses)
    event(f"distance one: {rule is not None}")
    assert (rule is not None) == (bool(finite) and min(finite) == 1)
    if rule is None:
        return
    assert per_rule[rule.name] == 1
    grid = [[truth.get((r, c), task.grid[r][c]) for c in range(task.cols)] for r in range(task.rows)]
    roles = tuple(SlotRoles(s.row, s.col, truth[(s.row, s.col)], (), ()) for s in task.slots)
    record = distance_to_ambiguity(task, Answer(task.task_id, grid, roles), None, witnesses=witnesses)
    assert (record.units, record.rule) == (1, rule.name)


@example(task=BOUNDARY, pick=0)
@example(task=ROW_REPEAT, pick=1)
@given(task=small_tasks(), pick=st.integers(0, 63))
def test_a_truth_that_is_no_completion_is_never_confirmed_by_its_start(task, pick):
    """HiGHS starts the "most decoys" solve from the truth (a start only bounds its search):
    a truth that breaks a rule is never taken for a completion, and the optimum over the real
    completions is still brute force's."""
    found = completions(task)
    others = [choice for choice in all_choices(task) if choice not in found]
    if not others:
        return
    truth = others[pick % len(others)]
    valid = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    decoys = {cell: [i for i in ids if i != truth[cell]] for cell, ids in valid.items()}
    check = crosscheck(task, truth, {c: ids for c, ids in decoys.items() if ids}, solver="highs")
    assert not check.truth_feasible and not check.ok
    used = max((sum(choice[c] in decoys[c] for c in choice) for choice in found), default=None)
    assert check.most_decoys_used == used
    assert check.decoys_infeasible == (used == 0)
