"""Stage 4: the certificate of one finished task, from the task data and the roles alone.

(a) the truth is a feasible completion, (b) forbidding the truth leaves the CP-SAT model
INFEASIBLE (uniqueness), (c) each decoy passes its slot rules and fixing it makes the model
INFEASIBLE, (d) each filtered item breaks at least one slot rule. UNKNOWN is never a pass.
"""

from __future__ import annotations

import time
from typing import Any

from solvers.checker import slot_violations
from solvers.cpsat import SOLVER_NAME, SOLVER_VERSION, CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings
from solvers.task import Answer, Task


def certify(task: Task, answer: Answer, settings: SolverSettings) -> dict[str, Any]:
    """Run every proof; returns the certificate record (``ok`` is the verdict)."""
    start = time.perf_counter()
    truth = answer.truth_choice()
    model = CpSatModel(task, settings, truth)
    truth_result = model.check_assignment(truth)
    other = model.other_completion()
    failures: list[str] = []
    if truth_result.status != FEASIBLE:
        failures.append(f"truth is not a feasible completion ({truth_result.status})")
    if other.status != INFEASIBLE:
        failures.append(_second_solution_message(other.status, other.solution))
    decoys_checked = 0
    for role in answer.roles:
        cell = (role.row, role.col)
        for decoy in role.decoys:
            decoys_checked += 1
            if model.literal(cell, decoy) is None:
                failures.append(f"decoy {decoy} at {cell} breaks a slot rule (should be filtered)")
                continue
            result = model.item_feasible(cell, decoy)
            if result.status != INFEASIBLE:
                failures.append(f"decoy {decoy} at {cell} is not refuted ({result.status})")
    slots = {(slot.row, slot.col): slot for slot in task.slots}
    filtered_checked = 0
    for role in answer.roles:
        rules = slots[(role.row, role.col)].constraints
        for item_id in role.filtered:
            filtered_checked += 1
            if not slot_violations(rules, task.items[item_id]):
                failures.append(f"filtered {item_id} at {(role.row, role.col)} passes its slot")
    return {
        "ok": not failures,
        "solver": SOLVER_NAME,
        "solver_version": SOLVER_VERSION,
        "solver_seed": settings.seed,
        "workers": settings.workers,
        "truth_feasible": truth_result.status,
        "uniqueness": other.status,
        "decoys_checked": decoys_checked,
        "filtered_checked": filtered_checked,
        "failures": failures,
        "wall_ms": (time.perf_counter() - start) * 1000.0,
    }


def _second_solution_message(status: str, solution: dict | None) -> str:
    if solution is None:
        return f"uniqueness not proved ({status})"
    cells = ", ".join(f"({r},{c})={i}" for (r, c), i in sorted(solution.items()))
    return f"a second solution exists: {cells}"
