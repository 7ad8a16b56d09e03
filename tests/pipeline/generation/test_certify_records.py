"""The certificate and the sealing step on the tiny hand-built task (tests/tiny.py), where every
role is known: what each record counts and says, one wrong role at a time."""

from __future__ import annotations

import dataclasses

import pytest

from gridbench_core.task import SlotRoles
from pipeline.generation.certify import certify
from pipeline.generation.seal import Sealed, seal
from solvers.cpsat import SOLVER_NAME, SOLVER_VERSION, CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings
from tests.tiny import ANSWER, OPEN_TASK, TASK

SETTINGS = SolverSettings(time_limit_s=20.0, seed=7, workers=1)


def _roles(**by_cell):
    roles = {f"c{r.row}{r.col}": r for r in ANSWER.roles}
    roles.update(by_cell)
    return dataclasses.replace(ANSWER, roles=tuple(roles.values()))


def test_the_certificate_of_a_sound_task():
    record = certify(TASK, ANSWER, SETTINGS)
    assert record.ok and record.failures == ()
    assert (record.truth_feasible, record.uniqueness, record.decoys_refuted) == (
        FEASIBLE,
        INFEASIBLE,
        INFEASIBLE,
    )
    assert (record.decoys_checked, record.filtered_checked) == (4, 1)
    assert (record.solver, record.solver_version, record.solver_seed, record.workers) == (
        SOLVER_NAME,
        SOLVER_VERSION,
        7,
        1,
    )
    assert certify(TASK, ANSWER, SETTINGS, CpSatModel(TASK, SETTINGS, ANSWER.truth_choice())) == record


@pytest.mark.parametrize(
    ("answer", "failures"),
    [
        (_roles(c01=SlotRoles(0, 1, "C", ("A",), ("B", "D"))), ["filtered D at (0, 1) passes its slot"]),
        (
            _roles(c01=SlotRoles(0, 1, "C", ("A", "D", "B"), ())),
            ["decoy B at (0, 1) breaks a slot rule (should be filtered)"],
        ),
        (_roles(c12=SlotRoles(1, 2, "G", ("E",), ("F",))), ["filtered F at (1, 2) passes its slot"]),
    ],
)
def test_each_wrong_role_is_one_named_failure(answer, failures):
    record = certify(TASK, answer, SETTINGS)
    assert not record.ok and list(record.failures) == failures
    assert record.uniqueness == INFEASIBLE and record.truth_feasible == FEASIBLE


def test_a_decoy_in_a_completion_and_a_second_solution_are_named():
    # OPEN_TASK admits (A, G) and (C, G) besides (D, G); F and E are in no completion
    answer = dataclasses.replace(
        ANSWER,
        truth=(("V00", "D", "V02"), ("V10", "V11", "G")),
        roles=(SlotRoles(0, 1, "D", ("A", "C"), ("B",)), SlotRoles(1, 2, "G", ("E", "F"), ())),
    )
    record = certify(OPEN_TASK, answer, SETTINGS)
    assert not record.ok and record.decoys_refuted == FEASIBLE and record.uniqueness == FEASIBLE
    assert record.failures[0] in (
        "a second solution exists: (0,1)=A, (1,2)=G",
        "a second solution exists: (0,1)=C, (1,2)=G",
    )
    assert "decoy A at (0, 1) is not refuted (FEASIBLE)" in record.failures
    assert "decoy C at (0, 1) is not refuted (FEASIBLE)" in record.failures
    assert len(record.failures) == 3


def test_a_truth_that_breaks_a_rule_is_named():
    answer = dataclasses.replace(
        ANSWER,
        truth=(("V00", "A", "V02"), ("V10", "V11", "G")),
        roles=(SlotRoles(0, 1, "A", ("C", "D"), ("B",)), SlotRoles(1, 2, "G", ("E", "F"), ())),
    )
    record = certify(TASK, answer, SETTINGS)
    assert record.truth_feasible == INFEASIBLE and not record.ok
    assert record.failures[0] == "truth is not a feasible completion (INFEASIBLE)"
    assert "decoy C at (0, 1) is not refuted (FEASIBLE)" in record.failures


def test_sealing_runs_what_is_asked_and_carries_the_records():
    bare = seal(TASK, ANSWER, SETTINGS)
    assert bare.certificate.ok and bare.measures is None and bare.crosscheck is None
    assert set(bare.timings) == {"certify_ms"} and not bare.unknown
    full = seal(TASK, ANSWER, SETTINGS, node_limit=1000, milp="highs")
    assert set(full.timings) == {"certify_ms", "measures_ms", "crosscheck_ms"}
    assert full.crosscheck is not None and full.crosscheck.ok and full.crosscheck.solver == "highs"
    assert full.measures is not None and full.measures.search_space == 9 and full.measures.dfs_nodes > 0
    answer = full.answer(ANSWER)
    assert (answer.certificate, answer.crosscheck, answer.measures) == (
        full.certificate,
        full.crosscheck,
        full.measures,
    )
    assert answer.truth == ANSWER.truth and answer.roles == ANSWER.roles and answer.task_id == ANSWER.task_id
    stamped = dataclasses.replace(full.certificate, seed=5)
    assert full.answer(ANSWER, stamped).certificate == stamped
    broken = seal(
        TASK, _roles(c01=SlotRoles(0, 1, "C", ("A",), ("B", "D"))), SETTINGS, node_limit=10, milp="cbc"
    )
    assert not broken.certificate.ok and broken.measures is None and broken.crosscheck is None
    assert not broken.unknown and set(broken.timings) == {"certify_ms"}
    assert Sealed(
        dataclasses.replace(full.certificate, failures=("uniqueness not proved (UNKNOWN)",))
    ).unknown


def test_every_filtered_item_is_checked_and_counted():
    from gridbench_core.task import SlotRule

    slots = (
        TASK.slots[0],
        dataclasses.replace(TASK.slots[1], constraints=(SlotRule("color", "not_in", ("blue",)),)),
    )
    task = dataclasses.replace(TASK, slots=slots)
    answer = _roles(c12=SlotRoles(1, 2, "G", ("F",), ("E",)))
    record = certify(task, answer, SETTINGS)
    assert record.ok and (record.filtered_checked, record.decoys_checked) == (2, 3)


def test_sealing_times_each_stage_in_milliseconds():
    import time

    start = time.perf_counter()
    sealed = seal(TASK, ANSWER, SETTINGS, node_limit=1000, milp="highs")
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    assert all(0.05 < value < elapsed_ms for value in sealed.timings.values()), (sealed.timings, elapsed_ms)
    assert sum(sealed.timings.values()) <= elapsed_ms


def test_sealing_cross_checks_with_the_solver_and_settings_asked_for():
    """The certificate may come from a model built with other settings; the cross-check runs
    with the given ones (here too short for HiGHS to answer anything) and the given solver."""
    generous = CpSatModel(TASK, SETTINGS, ANSWER.truth_choice())
    tiny = SolverSettings(time_limit_s=1e-9)
    sealed = seal(TASK, ANSWER, tiny, milp="highs", model=generous)
    assert sealed.certificate.ok and sealed.crosscheck is not None
    assert not sealed.crosscheck.ok and set(sealed.crosscheck.statuses.values()) == {"UNKNOWN"}
    cbc = seal(TASK, ANSWER, SETTINGS, milp="cbc")
    assert cbc.crosscheck is not None and cbc.crosscheck.ok and cbc.crosscheck.solver == "cbc"


def test_sealing_passes_witnesses_to_the_distance_measure():
    """A witness that breaks a rule by more than one unit settles nothing: the distance comes
    from the solver, the same as without witnesses; one that breaks weight by exactly one
    unit settles it at one unit."""
    plain = seal(TASK, ANSWER, SETTINGS, node_limit=100)
    far = seal(TASK, ANSWER, SETTINGS, node_limit=100, witnesses=[{(0, 1): "A", (1, 2): "G"}])
    assert plain.measures is not None and far.measures == plain.measures
    loose = dataclasses.replace(
        TASK, global_constraints=(*TASK.global_constraints[:1], TASK.global_constraints[2])
    )
    tight = dataclasses.replace(
        loose, global_constraints=(*loose.global_constraints, TASK.global_constraints[1].with_bound(24))
    )
    # (A, G) weighs 23 against a floor of 24: one unit; the truth (C, G) weighs 28
    near = seal(tight, ANSWER, SETTINGS, node_limit=100, witnesses=[{(0, 1): "A", (1, 2): "G"}])
    assert near.measures is not None and near.measures.distance_to_ambiguity.units == 1
    assert near.measures.distance_to_ambiguity.rule == "total_weight_min"


def test_a_decoy_that_breaks_its_slot_is_named_and_the_decoys_after_it_are_still_solved():
    # B breaks its slot rule (no literal, no solve); A and C, listed after it, are in completions
    answer = dataclasses.replace(
        ANSWER,
        truth=(("V00", "D", "V02"), ("V10", "V11", "G")),
        roles=(SlotRoles(0, 1, "D", ("B", "A", "C"), ()), SlotRoles(1, 2, "G", ("E", "F"), ())),
    )
    record = certify(OPEN_TASK, answer, SETTINGS)
    assert "decoy B at (0, 1) breaks a slot rule (should be filtered)" in record.failures
    assert "decoy A at (0, 1) is not refuted (FEASIBLE)" in record.failures
    assert "decoy C at (0, 1) is not refuted (FEASIBLE)" in record.failures
