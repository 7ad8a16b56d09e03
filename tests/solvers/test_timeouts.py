"""No proof from a time-out, ever. A deliberately hard task (tests/hard.py) makes CP-SAT, HiGHS
and CBC really stop on tiny limits; on every path -- the CP-SAT model, the certificate, sealing,
the MILP cross-check, the measures, repair and verify -- the answer is UNKNOWN and the claim
fails. Fixing every cell to the truth stays decidable within the same limits, so each test
also shows that the limit alone is what fails the claim."""

from __future__ import annotations

import pytest

from pipeline.generation.certify import certify
from pipeline.generation.measures import distance_to_ambiguity, measure
from pipeline.generation.seal import seal
from pipeline.storage.verification import prove_data
from solvers.cpsat import CpSatModel
from solvers.milp import MILP_SOLVERS, MilpModel, crosscheck, crosscheck_answer
from solvers.results import FEASIBLE, UNKNOWN, SolverSettings, SolverTimeout
from tests.hard import hard_task, other_items

TASK, ANSWER = hard_task(30)
TRUTH = ANSWER.truth_choice()
OTHERS = other_items(TASK, ANSWER)
BARE_TASK, BARE = hard_task(30, decoy_cells=0)  # roles without decoys: only uniqueness is at stake
# CP-SAT stops on its deterministic time (machine-independent); the MILPs on the wall clock
CPSAT = SolverSettings(time_limit_s=30.0, deterministic_limit=0.002)
MILP = SolverSettings(time_limit_s=0.1)


def test_cpsat_stopped_on_its_limit_answers_unknown_on_every_question():
    model = CpSatModel(TASK, CPSAT, TRUTH)
    assert model.check_assignment(TRUTH).status == FEASIBLE
    for result in (
        model.other_completion(),
        model.least_loosening_to_ambiguity(),
        model.loosening_to_ambiguity("total_cost_max"),
        model.some_feasible([(cell, ids[0]) for cell, ids in OTHERS.items()]),
        model.item_feasible((0, 0), OTHERS[(0, 0)][0]),
    ):
        assert result.status == UNKNOWN and result.solution is None and result.objective is None
        assert result.wall_ms is not None and result.wall_ms > 0  # the time it took is recorded


def test_an_optimisation_cut_short_is_unknown_even_with_a_completion_in_hand():
    """One attribute pinned: with its upper bound loosened any heavier completion will do
    (found at once), but the least loosening is a subset-sum optimum. Stopped before the
    optimum is proved, the answer is UNKNOWN with no objective, never that loosening."""
    import time

    task, answer = hard_task(30, decoy_cells=0, attributes=("cost",))
    truth = answer.truth_choice()
    model = CpSatModel(task, SolverSettings(time_limit_s=30.0, deterministic_limit=0.002), truth)
    start = time.perf_counter()
    result = model.loosening_to_ambiguity("total_cost_max")
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    assert result.status == UNKNOWN and result.objective is None
    assert result.solution is not None and result.solution != truth
    assert 1.0 < result.wall_ms <= elapsed_ms
    with pytest.raises(SolverTimeout):
        distance_to_ambiguity(task, answer, SolverSettings(time_limit_s=30.0, deterministic_limit=0.01))


def test_a_certificate_whose_uniqueness_solve_timed_out_is_not_ok():
    record = certify(BARE_TASK, BARE, CPSAT)
    assert record.truth_feasible == FEASIBLE and record.uniqueness == UNKNOWN
    assert not record.ok
    assert record.failures == ("uniqueness not proved (UNKNOWN)",)


def test_a_certificate_whose_decoy_solves_timed_out_is_not_ok():
    task, answer = hard_task(30, decoy_cells=3)
    record = certify(task, answer, CPSAT)
    assert not record.ok and record.decoys_refuted == UNKNOWN and record.decoys_checked == 3
    assert record.uniqueness == UNKNOWN
    # the per-decoy solves stop at the first time-out: the certificate has failed, and the
    # other decoys would each cost one more time limit
    assert sum("is not refuted (UNKNOWN)" in failure for failure in record.failures) == 1
    assert "2 more decoys not tried after that time-out" in record.failures


def test_sealing_a_timed_out_certificate_measures_and_crosschecks_nothing():
    sealed = seal(BARE_TASK, BARE, CPSAT, node_limit=100, milp="highs")
    assert sealed.unknown and not sealed.certificate.ok
    assert sealed.measures is None and sealed.crosscheck is None


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_milp_solve_stopped_on_its_time_limit_is_unknown_never_infeasible(solver):
    model = MilpModel(TASK, MILP, solver)
    assert model.truth_feasible(TRUTH).status == FEASIBLE
    other = model.other_completion(TRUTH)
    assert other.status == UNKNOWN and other.solution is None
    assert model.most_decoys(OTHERS).status == UNKNOWN


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_crosscheck_whose_solves_timed_out_claims_nothing(solver):
    """The one-solve proof (decoys = every other option) times out, and so do the three
    separate solves after it: not unique, decoys not refuted, no counterexample, not ok."""
    check = crosscheck(TASK, TRUTH, OTHERS, MILP, solver)
    assert check.statuses["other"] == UNKNOWN and check.statuses["most_decoys"] == UNKNOWN
    assert check.statuses["truth"] in (FEASIBLE, UNKNOWN)  # decided at once, unless the machine stalls
    assert not check.ok and not check.unique and not check.decoys_infeasible
    assert check.most_decoys_used is None and check.counterexample is None
    assert not crosscheck_answer(BARE_TASK, BARE, MILP, solver).unique


def test_the_distance_to_ambiguity_is_never_read_off_a_time_out():
    with pytest.raises(SolverTimeout):
        distance_to_ambiguity(BARE_TASK, BARE, CPSAT)
    with pytest.raises(SolverTimeout):
        measure(BARE_TASK, BARE, CPSAT, node_limit=50)


def test_verify_fails_a_task_whose_proofs_time_out():
    settings = SolverSettings(time_limit_s=0.025, deterministic_limit=0.005)
    task_id, domain, reasons = prove_data(
        TASK.to_dict(), ANSWER.to_dict(), f"tasks/toy/{TASK.task_id}.json", settings, "highs"
    )
    assert (task_id, domain) == (TASK.task_id, "toy")
    assert "uniqueness not proved (UNKNOWN)" in reasons
    # asked again with 4x the limit, the MILP times out again: named a time-out, never a pass,
    # and the limit to try next is longer than both (wall seconds, not deterministic units)
    timed_out = [reason for reason in reasons if reason.startswith("highs could not decide within 0.1 s")]
    assert len(timed_out) == 1 and "'other': 'UNKNOWN'" in timed_out[0], reasons
    assert timed_out[0].endswith("(solver.time_limit_s=0.4)")
    assert not any("disagrees" in reason for reason in reasons)
    generous = SolverSettings(time_limit_s=30.0)
    small, small_answer = hard_task(8, seed=1)  # the same construction, small enough to prove
    assert (
        prove_data(
            small.to_dict(), small_answer.to_dict(), f"tasks/toy/{small.task_id}.json", generous, "highs"
        )[2]
        == []
    ), "the hard construction itself verifies when the solvers have time"


def test_an_imported_instance_whose_proofs_time_out_is_neither_unique_nor_certified():
    from gridbench.commands.import_agentce import certify_instance
    from pipeline.generation.keys import TaskKey

    key = TaskKey("toy", 1, 30, 30, 0, 2)
    made, status = certify_instance((key, BARE_TASK, BARE, CPSAT, "highs", 100))
    assert status["unique"] is False and status["certified"] is False
    assert status["failures"] == ["uniqueness not proved (UNKNOWN)"] and status["crosscheck_ok"] is None
    assert made.answer.certificate is not None and not made.answer.certificate.ok


def test_generation_re_draws_on_a_time_out_and_never_certifies_from_one():
    """Repair's uniqueness solve, the final certificate and the measures all stop at once
    with a tiny limit: every draw is discarded and the key fails with a clear error."""
    from pipeline.generation import GenerationSettings, TaskKey, generate_task
    from pipeline.generation.keys import GenerationError

    with pytest.raises(GenerationError, match="SolverTimeout"):
        generate_task(
            TaskKey("toy", 3, 3, 4, 6, 5, seed=2), GenerationSettings(time_limit_s=1e-9, max_attempts=2)
        )


@pytest.mark.slow  # a rare race (about one solve in thirty): many solves to see it
def test_cbc_cut_short_in_preprocessing_never_claims_infeasible():
    """With its preprocessing on, the bundled CBC stopped by a millisecond limit sometimes said
    "Pre-processing says infeasible" of a task that has a second completion. The limit timing
    decides it, so the test repeats the solve; with the fix no run may say INFEASIBLE."""
    from tests.hard import twin_task

    task, truth = twin_task(20)
    statuses = {
        MilpModel(task, SolverSettings(time_limit_s=limit), "cbc").other_completion(truth).status
        for limit in (0.0005, 0.001, 0.003) * 60
    }
    assert "INFEASIBLE" not in statuses
    assert (
        MilpModel(task, SolverSettings(time_limit_s=30.0), "cbc").other_completion(truth).status == FEASIBLE
    )


class Interrupted(Exception):
    """Raised by the test's own SIGINT handler."""


def test_ctrl_c_during_a_solve_is_python_s_never_an_unknown():
    """CP-SAT catches SIGINT by default: it ends the search as if its time limit had passed
    (an UNKNOWN, which generation re-draws, so Ctrl-C never stopped a build) and leaves SIGINT
    at its default action afterwards. Here Ctrl-C must reach Python's handler, after the
    solve as before it, however the solve ended."""
    import os
    import signal
    import threading

    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    try:
        model = CpSatModel(
            BARE_TASK, SolverSettings(time_limit_s=30.0, deterministic_limit=0.5), BARE.truth_choice()
        )
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(Interrupted):
            model.other_completion()
            model.other_completion()  # the signal came before the first solve began
        timer.join()
        with pytest.raises(Interrupted):  # SIGINT is still Python's after a solve
            os.kill(os.getpid(), signal.SIGINT)
            model.check_assignment(BARE.truth_choice())
    finally:
        signal.signal(signal.SIGINT, previous)
