"""CP-SAT questions that need no solve: an item that breaks its cell's slot rules has no choice
literal, so an assignment or a set of items made of such items is INFEASIBLE at once (0 ms,
no solution), and the proofs that use them stay usable."""

from __future__ import annotations

from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolveResult
from tests.brute import distance
from tests.examples import LOWER_LOOSENING
from tests.tiny import ANSWER, TASK

NO_SOLVE = SolveResult(INFEASIBLE, 0.0)


def test_items_that_break_their_slot_are_refuted_without_a_solve():
    model = CpSatModel(TASK, truth=ANSWER.truth_choice())
    assert model.literal((0, 1), "B") is None and model.literal((0, 1), "A") is not None
    assert model.check_assignment({(0, 1): "B", (1, 2): "G"}) == NO_SOLVE
    assert model.item_feasible((0, 1), "B") == NO_SOLVE
    assert model.some_feasible([((0, 1), "B")]) == NO_SOLVE
    assert model.some_feasible([]) == NO_SOLVE
    assert model.check_assignment(ANSWER.truth_choice()).status == FEASIBLE
    assert model.some_feasible([((0, 1), "B"), ((0, 1), "C")]).status == FEASIBLE


def test_a_lower_bound_loosens_by_exactly_what_the_best_other_completion_lacks():
    truth = {(0, 0): "a0", (0, 1): "b0"}
    model = CpSatModel(LOWER_LOOSENING, truth=truth)
    assert distance(LOWER_LOOSENING, truth, "total_weight") == 2
    result = model.loosening_to_ambiguity("total_weight")
    assert result.status == FEASIBLE and result.objective == 2
    assert model.least_loosening_to_ambiguity().objective == 2


def test_every_solve_reports_its_wall_time_in_milliseconds():
    import time

    model = CpSatModel(TASK, truth=ANSWER.truth_choice())
    for question in (model.other_completion, lambda: model.solve([]), model.least_loosening_to_ambiguity):
        start = time.perf_counter()
        result = question()
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        assert result.status in (FEASIBLE, INFEASIBLE)
        assert 0.01 < result.wall_ms <= elapsed_ms, (result, elapsed_ms)


def test_a_rule_kind_the_model_does_not_know_is_named():
    import dataclasses

    import pytest

    from gridbench_core.task import GlobalRule

    task = dataclasses.replace(TASK, global_constraints=(GlobalRule("m", "median", "cost", 3),))
    with pytest.raises(ValueError, match="unknown rule kind 'median'"):
        CpSatModel(task)


def test_the_solver_version_recorded_is_the_installed_or_tools():
    import ortools

    from solvers.cpsat import SOLVER_VERSION, _version

    assert _version() == SOLVER_VERSION == ortools.__version__ and SOLVER_VERSION[0].isdigit()
