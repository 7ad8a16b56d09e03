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


TRUE_CROSSCHECK = {
    "solver": "highs",
    "solver_version": "highs 1.12.0",
    "truth_feasible": True,
    "unique": True,
    "decoys_infeasible": True,
    "most_decoys_used": 0,
    "statuses": {"most_decoys": "FEASIBLE"},
    "ok": True,
}


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
            **TRUE_CROSSCHECK,
            "solver_version": "highs 1.12.0\x1b[2J",
            "counterexample": None,
        }
    else:
        answer["certificate"]["solver_version"] = "9.15\x1b[31m"
    reasons = _prove(TASK.to_dict(), answer)
    assert len(reasons) == 1 and "solver_version" in reasons[0] and "cannot be shown safely" in reasons[0]
    assert "\x1b" not in reasons[0]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({}, None),
        ({"unique": False}, "crosscheck.unique records False"),
        ({"decoys_infeasible": False, "most_decoys_used": 2}, "crosscheck.decoys_infeasible records False"),
        ({"truth_feasible": False}, "crosscheck.truth_feasible records False"),
        ({"ok": False}, "crosscheck.ok records False"),
        ({"counterexample": {"(0,0)": "x"}}, "crosscheck.counterexample records a second completion"),
        ({"statuses": {"most_decoys": "INFEASIBLE\u202e"}}, "crosscheck.statuses"),
    ],
)
def test_a_crosscheck_record_that_contradicts_the_proofs_is_named(edit, named):
    """Found by an outside audit: the answer's cross-check record was never read, so one
    claiming that the MILP found the task ambiguous (or a status with a direction override)
    passed. Against a task CP-SAT proves, each verdict must be the proved one."""
    answer = _with_certificate(ANSWER)
    answer["crosscheck"] = {**TRUE_CROSSCHECK, **edit}
    reasons = _prove(TASK.to_dict(), answer)
    if named is None:
        assert reasons == []
    else:
        assert reasons and all(r.startswith(named.split(" records")[0]) for r in reasons[:1]), reasons
        assert any(named in r for r in reasons) and "\u202e" not in "".join(reasons), reasons


def test_an_item_that_no_cell_shows_or_offers_is_refused():
    task = TASK.to_dict()
    spare = dict(task["items"][0], id="zz_the_truth_is_" + task["items"][0]["id"])
    task["items"] = sorted([*task["items"], spare], key=lambda item: item["id"])
    reasons = _prove(task, _with_certificate(ANSWER))
    assert len(reasons) == 1 and "no cell shows or offers" in reasons[0] and "zz_the_truth_is_" in reasons[0]
    assert task_shape(TASK, REL) == []  # every item of the untouched task is used


@pytest.mark.parametrize("milp", [None, "highs", "cbc"])
def test_a_difficulty_lie_is_caught_with_or_without_the_cross_check(milp, tiny_release):
    """The measures an answer claims are derived again whichever proofs verify runs: turning
    the MILP cross-check on adds a proof, it never skips the claims."""
    import json

    task_file = sorted((tiny_release / "tasks").rglob("*.json"))[0]
    relative = task_file.relative_to(tiny_release).as_posix()
    task = json.loads(task_file.read_text())
    answer = json.loads(
        (tiny_release / "answers" / task_file.relative_to(tiny_release / "tasks")).read_text()
    )
    assert prove_data(task, answer, relative, SOLVER, milp)[2] == []
    answer["measures"]["search_space"] += 1
    reasons = prove_data(task, answer, relative, SOLVER, milp)[2]
    assert len(reasons) == 1 and reasons[0].startswith("measures.search_space claims"), reasons


def _set(path: str, change):
    def edit(measures: dict) -> None:
        *parents, key = path.split(".")
        target = measures
        for parent in parents:
            target = target[parent]
        target[key] = change(target[key])

    return edit


LIES = [
    ("dfs_nodes+1", _set("dfs_nodes", lambda n: n + 1), "measures.dfs_nodes"),
    ("dfs_nodes-1", _set("dfs_nodes", lambda n: n - 1), "measures.dfs_nodes"),
    ("joint_bits+1", _set("effort.joint_bits", lambda b: b + 1.0), "measures.effort.joint_bits"),
    ("joint_bits+1e-3", _set("effort.joint_bits", lambda b: b + 1e-3), "measures.effort.joint_bits"),
    ("open_after[-1]+1", _set("depth.open_after", lambda o: [*o[:-1], o[-1] + 1]), "measures.depth"),
    ("open_after[0]+1", _set("depth.open_after", lambda o: [o[0] + 1, *o[1:]]), "measures.depth"),
    ("search_nodes+1", _set("effort.search_nodes", lambda n: n + 1), "measures.effort.search_nodes"),
]


@pytest.mark.parametrize(("name", "lie", "named"), LIES, ids=[lie[0] for lie in LIES])
def test_each_count_claimed_is_re_derived_both_ways(name, lie, named, tiny_release):
    """A claimed count or measure is compared for equality, in both directions: overstating
    the difficulty (more nodes, more joint bits, more options left after a rung) is a lie as much
    as understating it."""
    import json

    task_file = sorted((tiny_release / "tasks").rglob("*.json"))[0]
    relative = task_file.relative_to(tiny_release).as_posix()
    task = json.loads(task_file.read_text())
    answer = json.loads(
        (tiny_release / "answers" / task_file.relative_to(tiny_release / "tasks")).read_text()
    )
    lie(answer["measures"])
    reasons = prove_data(task, answer, relative, SOLVER, None)[2]
    assert any(reason.startswith(named) for reason in reasons), reasons
