"""Stage 4: the certificate of one finished task, from the task data and the roles alone.

(a) the truth is a feasible completion, (b) forbidding the truth leaves the CP-SAT model
INFEASIBLE (uniqueness), (c) each decoy passes its slot rules and no feasible completion uses
any decoy (one INFEASIBLE solve for all of them; per-decoy solves only to name a failure),
(d) each filtered item breaks at least one slot rule. UNKNOWN is never a pass.
"""

from __future__ import annotations

from gridbench_core.records import Certificate
from gridbench_core.task import Answer, Task
from solvers.checker import slot_violations
from solvers.cpsat import SOLVER_NAME, SOLVER_VERSION, CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, UNKNOWN, SolverSettings


def certify(
    task: Task, answer: Answer, settings: SolverSettings, model: CpSatModel | None = None
) -> Certificate:
    """Run every proof; returns the certificate (``ok`` is the verdict). ``model`` is a CP-SAT
    model of this task and truth, built here when not given."""
    truth = answer.truth_choice()
    model = model or CpSatModel(task, settings, truth)
    truth_result = model.check_assignment(truth)
    other = model.other_completion(proof=True)
    if other.status == FEASIBLE:
        # not unique: ask again as the search always has, so that the second completion a
        # failure names (recorded by import and verify) is the one it named before
        other = model.other_completion()
    failures: list[str] = []
    if truth_result.status != FEASIBLE:
        failures.append(f"truth is not a feasible completion ({truth_result.status})")
    if other.status != INFEASIBLE:
        failures.append(_second_solution_message(other.status, other.solution))
    decoys = [((role.row, role.col), d) for role in answer.roles for d in role.decoys]
    decoys_status, decoy_failures = _refute_decoys(model, decoys)
    failures += decoy_failures
    slots = {(slot.row, slot.col): slot for slot in task.slots}
    filtered_checked = 0
    for role in answer.roles:
        rules = slots[(role.row, role.col)].constraints
        for item_id in role.filtered:
            filtered_checked += 1
            if not slot_violations(rules, task.items[item_id]):
                failures.append(f"filtered {item_id} at {(role.row, role.col)} passes its slot")
    return Certificate(
        ok=not failures,
        solver=SOLVER_NAME,
        solver_version=SOLVER_VERSION,
        solver_seed=settings.seed,
        workers=settings.workers,
        truth_feasible=truth_result.status,
        uniqueness=other.status,
        decoys_refuted=decoys_status,
        decoys_checked=len(decoys),
        filtered_checked=filtered_checked,
        failures=tuple(failures),
    )


def _refute_decoys(model: CpSatModel, decoys: list[tuple[tuple[int, int], str]]) -> tuple[str, list[str]]:
    """One solve proves every decoy wrong ("some decoy is used" is INFEASIBLE); only when it
    is not, one solve per decoy proves them one by one or names the failures. Returns (joint
    status, failures).

    The per-decoy solves stop at the first that hits the time limit: the certificate has
    failed then, and asking the rest would cost one time limit a decoy (a task of 60 decoys
    whose solves all time out took 60 limits to verify); the decoys left untried are named
    in one line."""
    failures = [
        f"decoy {d} at {cell} breaks a slot rule (should be filtered)"
        for cell, d in decoys
        if model.literal(cell, d) is None
    ]
    status = model.some_feasible(decoys).status
    if status == INFEASIBLE:
        return status, failures
    for number, (cell, decoy) in enumerate(decoys):
        if model.literal(cell, decoy) is None:
            continue
        result = model.item_feasible(cell, decoy)
        if result.status != INFEASIBLE:
            failures.append(f"decoy {decoy} at {cell} is not refuted ({result.status})")
        if result.status == UNKNOWN:
            untried = sum(model.literal(c, d) is not None for c, d in decoys[number + 1 :])
            if untried:
                failures.append(f"{untried} more decoys not tried after that time-out")
            break
    return status, failures


def _second_solution_message(status: str, solution: dict | None) -> str:
    if solution is None:
        return f"uniqueness not proved ({status})"
    cells = ", ".join(f"({r},{c})={i}" for (r, c), i in sorted(solution.items()))
    return f"a second solution exists: {cells}"
