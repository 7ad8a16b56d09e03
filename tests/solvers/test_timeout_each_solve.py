"""A time-out at any one solve of a proof is never a pass, separately for every solve.

``test_timeouts.py`` makes whole tasks hard, so every solve but the easy one (fixing the
truth) times out together: a verdict that misread the easy solve's status went unnoticed (a
planted ``== INFEASIBLE`` for ``!= FEASIBLE`` gave ``ok=True`` on a timed-out truth check, a
cross-check that compared the wrong status passed a timed-out "other completion"). Here the
tiny task, which certifies in milliseconds, gets an UNKNOWN injected at exactly one solve
(the k-th, for every k) of the CP-SAT certificate and of each MILP cross-check: the verdict
must fail, unless the claim that solve was for is proved again by other solves (the joint
decoy solve is followed by one solve per decoy)."""

from __future__ import annotations

import pytest

from pipeline.generation.certify import certify
from solvers import cpsat, milp
from solvers.milp import MILP_SOLVERS, crosscheck_answer
from solvers.results import INFEASIBLE, UNKNOWN, SolveResult, SolverSettings
from tests.tiny import ANSWER, TASK

SETTINGS = SolverSettings(time_limit_s=10.0)


class Injected:
    """Counts the solves of a proof (by the question each one answers) and answers UNKNOWN
    at the positions in ``at``."""

    def __init__(self, at: set[int]) -> None:
        self.at, self.calls, self.phase = at, [], ""

    def result(self, real):
        self.calls.append(self.phase)
        if len(self.calls) - 1 in self.at:
            return SolveResult(UNKNOWN, 1.0)
        return real()


def _cpsat_spy(monkeypatch, injected: Injected) -> None:
    solve = cpsat.CpSatModel.solve
    monkeypatch.setattr(
        cpsat.CpSatModel,
        "solve",
        lambda self, *a, **k: injected.result(lambda: solve(self, *a, **k)),
    )
    for name in ("check_assignment", "other_completion", "some_feasible", "item_feasible"):
        method = getattr(cpsat.CpSatModel, name)

        def tagged(self, *a, _method=method, _name=name, **k):
            injected.phase = _name
            return _method(self, *a, **k)

        monkeypatch.setattr(cpsat.CpSatModel, name, tagged)


def _cpsat_calls(monkeypatch) -> list[str]:
    clean = Injected(set())
    with monkeypatch.context() as patch:
        _cpsat_spy(patch, clean)
        assert certify(TASK, ANSWER, SETTINGS).ok
    return clean.calls


def test_the_tiny_certificate_asks_every_question(monkeypatch):
    assert _cpsat_calls(monkeypatch) == ["check_assignment", "other_completion", "some_feasible"]


@pytest.mark.parametrize("position", range(3))
def test_a_certificate_with_one_solve_timed_out_is_never_ok_on_that_solve(position, monkeypatch):
    injected = Injected({position})
    _cpsat_spy(monkeypatch, injected)
    certificate = certify(TASK, ANSWER, SETTINGS)
    phase = injected.calls[position]
    if phase == "some_feasible":
        # the joint decoy solve timed out: each decoy then gets its own solve, and only their
        # INFEASIBLE results may carry the claim
        per_decoy = injected.calls[position + 1 :]
        decoys = sum(len(role.decoys) for role in ANSWER.roles)
        assert per_decoy == ["item_feasible"] * decoys
        assert certificate.decoys_refuted == UNKNOWN and certificate.ok
    else:
        assert not certificate.ok, (phase, certificate)
        assert certificate.failures and any(UNKNOWN in f or "not proved" in f for f in certificate.failures)
    if phase == "check_assignment":
        assert certificate.truth_feasible == UNKNOWN
    if phase == "other_completion":
        assert certificate.uniqueness == UNKNOWN


@pytest.mark.parametrize("decoy", range(4))
def test_a_decoy_whose_own_solve_timed_out_is_not_refuted(decoy, monkeypatch):
    """The joint solve timed out, then one per-decoy solve too: that decoy is not proved."""
    injected = Injected({2, 3 + decoy})
    _cpsat_spy(monkeypatch, injected)
    certificate = certify(TASK, ANSWER, SETTINGS)
    assert not certificate.ok
    assert any("is not refuted (UNKNOWN)" in f for f in certificate.failures), certificate.failures
    # the per-decoy solves stop at that time-out (each further one could cost a whole limit)
    decoys = sum(len(role.decoys) for role in ANSWER.roles)
    assert injected.calls[3:] == ["item_feasible"] * (decoy + 1), injected.calls
    untried = decoys - decoy - 1
    assert (f"{untried} more decoys not tried after that time-out" in certificate.failures) == (untried > 0)


def _milp_spy(monkeypatch, injected: Injected) -> None:
    ask = milp.MilpModel._ask
    monkeypatch.setattr(
        milp.MilpModel, "_ask", lambda self, *a, **k: injected.result(lambda: ask(self, *a, **k))
    )
    for name in ("truth_feasible", "other_completion", "most_decoys"):
        method = getattr(milp.MilpModel, name)

        def tagged(self, *a, _method=method, _name=name, **k):
            injected.phase = _name
            return _method(self, *a, **k)

        monkeypatch.setattr(milp.MilpModel, name, tagged)


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_crosscheck_with_one_solve_timed_out_is_never_ok_on_that_solve(solver, monkeypatch):
    clean = Injected(set())
    with monkeypatch.context() as patch:
        _milp_spy(patch, clean)
        assert crosscheck_answer(TASK, ANSWER, SETTINGS, solver).ok
    assert clean.calls == ["most_decoys"]  # one solve proves it all when options are exact
    # the one solve timed out: the three separate solves prove it again
    first = Injected({0})
    with monkeypatch.context() as patch:
        _milp_spy(patch, first)
        check = crosscheck_answer(TASK, ANSWER, SETTINGS, solver)
    assert first.calls == ["most_decoys", "truth_feasible", "other_completion", "most_decoys"]
    assert check.ok and check.statuses == {
        "truth": "FEASIBLE",
        "other": INFEASIBLE,
        "most_decoys": "FEASIBLE",
    }
    for position, claim in ((1, "truth_feasible"), (2, "unique"), (3, "decoys_infeasible")):
        injected = Injected({0, position})
        with monkeypatch.context() as patch:
            _milp_spy(patch, injected)
            check = crosscheck_answer(TASK, ANSWER, SETTINGS, solver)
        assert not check.ok and getattr(check, claim) is False, (position, check)
        assert UNKNOWN in check.statuses.values() and check.counterexample is None
