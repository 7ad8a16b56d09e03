"""What an answer file records about its own proofs, and what a task file lists beside its
cells, are claims too (hostile round 5): a certificate record whose verdict, statuses or counts
are not the re-proof's, a solver version that cannot be shown, and an item that no cell shows
or offers are each one named failure; the true records pass."""

from __future__ import annotations

import pytest

from pipeline.storage.verification import prove_data, task_shape
from solvers.results import SolverSettings
from tests.pipeline.storage.test_verify_checks import REL, _with_certificate
from tests.tiny import ANSWER, TASK

SOLVER = SolverSettings(time_limit_s=30.0)


def _prove(task: dict, answer: dict) -> list[str]:
    return prove_data(task, answer, REL, SOLVER, None)[2]


def test_the_true_certificate_record_passes():
    assert _prove(TASK.to_dict(), _with_certificate(ANSWER)) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ok", False),
        ("failures", ["a second solution exists"]),
        ("truth_feasible", "UNKNOWN"),
        ("uniqueness", "UNKNOWN"),
        ("decoys_refuted", "FEASIBLE"),
        ("decoys_checked", 999),
        ("decoys_checked", 3),
        ("filtered_checked", 0),
        ("solver", "gurobi"),
    ],
)
def test_a_certificate_record_that_the_re_proof_does_not_give_is_named(key, value):
    answer = _with_certificate(ANSWER)
    answer["certificate"][key] = value
    reasons = _prove(TASK.to_dict(), answer)
    assert any(reason.startswith(f"certificate.{key} records ") for reason in reasons), reasons
    assert len(reasons) == 1


@pytest.mark.parametrize("where", ["certificate", "crosscheck"])
def test_a_solver_version_with_an_escape_is_not_shown_and_fails(where):
    answer = _with_certificate(ANSWER)
    if where == "crosscheck":
        answer["crosscheck"] = {
            "solver": "highs",
            "solver_version": "highs 1.12.0\x1b[2J",
            "truth_feasible": True,
            "unique": True,
            "decoys_infeasible": True,
            "most_decoys_used": 0,
            "statuses": {"most_decoys": "FEASIBLE"},
            "ok": True,
            "counterexample": None,
        }
    else:
        answer["certificate"]["solver_version"] = "9.15\x1b[31m"
    reasons = _prove(TASK.to_dict(), answer)
    assert len(reasons) == 1 and "solver_version" in reasons[0] and "cannot be shown safely" in reasons[0]
    assert "\x1b" not in reasons[0]


def test_an_item_that_no_cell_shows_or_offers_is_refused():
    task = TASK.to_dict()
    spare = dict(task["items"][0], id="zz_the_truth_is_" + task["items"][0]["id"])
    task["items"] = sorted([*task["items"], spare], key=lambda item: item["id"])
    reasons = _prove(task, _with_certificate(ANSWER))
    assert len(reasons) == 1 and "no cell shows or offers" in reasons[0] and "zz_the_truth_is_" in reasons[0]
    assert task_shape(TASK, REL) == []  # every item of the untouched task is used
