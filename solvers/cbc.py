"""Independent cross-check with PuLP / CBC.

Written separately from the CP-SAT path on purpose: it evaluates slot rules and builds the
rule rows itself, from the task data alone, so a bug in one model is unlikely to be repeated
in the other. It confirms (a) the truth is feasible, (b) no other completion exists, and
(c) no decoy appears in any feasible completion (one MILP: the largest number of decoys a
feasible completion can use is 0).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pulp

from solvers.results import FEASIBLE, INFEASIBLE, UNKNOWN, Cell, SolveResult, SolverSettings
from solvers.task import Task

SOLVER_NAME = "pulp-cbc"
SOLVER_VERSION = f"pulp {pulp.__version__}"


def _passes(constraints: Any, record: Mapping[str, Any]) -> bool:
    for rule in constraints:
        value = record.get(rule.attribute)
        ok = {
            "<=": lambda v, r=rule: isinstance(v, int) and v <= r.value,
            ">=": lambda v, r=rule: isinstance(v, int) and v >= r.value,
            "in": lambda v, r=rule: v in r.value,
            "not_in": lambda v, r=rule: v is not None and v not in r.value,
        }[rule.op](value)
        if not ok:
            return False
    return True


class CbcModel:
    """A PuLP problem per question; variables y[(row, col, id)] in {0, 1}."""

    def __init__(self, task: Task, settings: SolverSettings | None = None) -> None:
        self.task = task
        self.settings = settings or SolverSettings()
        self.options: dict[Cell, list[str]] = {
            (s.row, s.col): [c for c in s.candidates if _passes(s.constraints, task.items[c])]
            for s in task.slots
        }

    def _problem(self, sense: int = pulp.LpMinimize) -> tuple[pulp.LpProblem, dict]:
        problem = pulp.LpProblem("grid_task", sense)
        y = {(r, c, i): pulp.LpVariable(f"y_{r}_{c}_{n}", cat="Binary")
             for (r, c), ids in self.options.items() for n, i in enumerate(ids)}  # fmt: skip
        for (r, c), ids in self.options.items():
            problem += pulp.lpSum(y[(r, c, i)] for i in ids) == 1, f"one_{r}_{c}"
        for number, rule in enumerate(self.task.global_constraints):
            for name, lhs in self._rows(rule, y):
                tag = f"g{number}_{name}"
                if rule.kind in ("sum_max", "repeat_max", "count_max"):
                    problem += lhs <= rule.bound, tag
                else:
                    problem += lhs >= rule.bound, tag
        return problem, y

    def _rows(self, rule: Any, y: dict) -> list[tuple[str, Any]]:
        rows, cols = self.task.rows, self.task.cols
        if rule.scope == "grid":
            groups = {"all": [(r, c) for r in range(rows) for c in range(cols)]}
        elif rule.scope == "row":
            groups = {f"r{r}": [(r, c) for c in range(cols)] for r in range(rows)}
        else:
            groups = {f"c{c}": [(r, c) for r in range(rows)] for c in range(cols)}
        out = []
        for gname, cells in groups.items():
            if rule.kind == "repeat_max":
                values = sorted({str(self.task.items[i][rule.attribute])
                                 for cell in cells for i in self._ids(cell)})  # fmt: skip
                for k, value in enumerate(values):
                    out.append((f"{gname}_v{k}", self._sum(
                        cells, y, lambda rec, v=value: int(str(rec[rule.attribute]) == v))))
            else:
                out.append((gname, self._sum(cells, y, lambda rec: _coefficient(rule, rec))))
        return out

    def _ids(self, cell: Cell) -> list[str]:
        visible = self.task.grid[cell[0]][cell[1]]
        return [visible] if visible is not None else self.options[cell]

    def _sum(self, cells: list[Cell], y: dict, coef: Any) -> Any:
        constant, terms = 0, []
        for r, c in cells:
            visible = self.task.grid[r][c]
            if visible is not None:
                constant += coef(self.task.items[visible])
            else:
                terms += [coef(self.task.items[i]) * y[(r, c, i)] for i in self.options[(r, c)]]
        return pulp.lpSum(terms) + constant

    def _run(self, problem: pulp.LpProblem, y: dict) -> SolveResult:
        # No `threads` option: with "-threads 1" the bundled CBC starts a worker thread that
        # sometimes waits 10 s to start (seen: "Thread 0 ... waiting to start 10.0"), which
        # turned quick proofs into time-outs. Without it CBC runs single-threaded anyway.
        command = pulp.PULP_CBC_CMD(msg=False, timeLimit=self.settings.time_limit_s)
        start = time.perf_counter()
        problem.solve(command)
        wall_ms = (time.perf_counter() - start) * 1000.0
        if problem.sol_status == pulp.LpSolutionInfeasible or problem.status == -1:
            return SolveResult(INFEASIBLE, wall_ms)
        if problem.sol_status == pulp.LpSolutionOptimal:
            chosen = {(r, c): i for (r, c, i), var in y.items() if (var.value() or 0) > 0.5}
            objective = pulp.value(problem.objective)  # None for an empty objective
            return SolveResult(FEASIBLE, wall_ms, chosen, int(round(objective or 0)))
        return SolveResult(UNKNOWN, wall_ms)

    def truth_feasible(self, truth: Mapping[Cell, str]) -> SolveResult:
        if any(truth[cell] not in ids for cell, ids in self.options.items()):
            return SolveResult(INFEASIBLE, 0.0)
        problem, y = self._problem()
        problem += pulp.lpSum([]), "objective"
        for (r, c), item_id in truth.items():
            problem += y[(r, c, item_id)] == 1, f"fix_{r}_{c}"
        return self._run(problem, y)

    def other_completion(self, truth: Mapping[Cell, str]) -> SolveResult:
        problem, y = self._problem()
        problem += pulp.lpSum([]), "objective"
        same = [y[(r, c, i)] for (r, c), i in truth.items() if (r, c, i) in y]
        problem += pulp.lpSum(same) <= len(self.options) - 1, "not_truth"
        return self._run(problem, y)

    def most_decoys(self, decoys: Mapping[Cell, list[str]]) -> SolveResult:
        """The most decoys any feasible completion uses (``objective``; 0 is the proof)."""
        problem, y = self._problem(pulp.LpMaximize)
        used = [y[(r, c, i)] for (r, c), ids in decoys.items() for i in ids if (r, c, i) in y]
        problem += pulp.lpSum(used), "objective"
        return self._run(problem, y)


def _coefficient(rule: Any, record: Mapping[str, Any]) -> int:
    value = record[rule.attribute]
    if rule.kind in ("sum_max", "sum_min"):
        return int(value)
    if rule.kind in ("count_min", "count_max"):
        return 1 if value == rule.equals else 0
    return 1 if int(value) >= int(rule.at_least) else 0


def crosscheck(task: Task, truth: Mapping[Cell, str], decoys: Mapping[Cell, list[str]],
               settings: SolverSettings | None = None) -> dict[str, Any]:  # fmt: skip
    """Run the three CBC confirmations; returns a record with a status per proof."""
    model = CbcModel(task, settings)
    start = time.perf_counter()
    truth_result = model.truth_feasible(truth)
    other = model.other_completion(truth)
    most = model.most_decoys(decoys)
    decoys_ok = most.status == FEASIBLE and most.objective == 0
    record = {
        "solver": SOLVER_NAME,
        "solver_version": SOLVER_VERSION,
        "truth_feasible": truth_result.status == FEASIBLE,
        "unique": other.status == INFEASIBLE,
        "decoys_infeasible": decoys_ok,
        "statuses": {"truth": truth_result.status, "other": other.status, "decoys": most.status},
        "wall_ms": round((time.perf_counter() - start) * 1000.0, 3),
    }
    record["ok"] = bool(record["truth_feasible"] and record["unique"] and decoys_ok)
    if other.status == FEASIBLE and other.solution is not None:
        record["counterexample"] = {f"{r},{c}": i for (r, c), i in sorted(other.solution.items())}
    return record
