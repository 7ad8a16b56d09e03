"""Independent MILP cross-check, solved by HiGHS (``highspy``, default) or CBC (PuLP).

Written separately from the CP-SAT path on purpose: it evaluates slot rules and builds the
rule rows itself, from the task data alone, so a bug in one model is unlikely to be repeated
in the other. It confirms (a) the truth is feasible, (b) no other completion exists, and
(c) no decoy appears in any feasible completion. One MILP proves all three when the model's
own locally valid options are exactly the answer's truth and decoys: the largest number of
decoys a feasible completion can use is 0 (the record keeps that objective); otherwise three
solves tell which proof fails.

The formulation is plain data (binary columns, linear rows) built once per task; each
question adds its rows and objective and hands the whole to a back-end. HiGHS is the
default: the bundled CBC 2.10.3 (2019) has been seen to answer a feasible "most decoys" MILP
with "Pre-processing says infeasible or unbounded" (issue 7); CBC stays selectable.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.lazy import lazy_module
from gridbench_core.records import CrossCheck
from gridbench_core.task import Answer, Task
from gridbench_core.vocabulary import RuleKind
from solvers.checker import rule_groups
from solvers.results import FEASIBLE, INFEASIBLE, UNKNOWN, Cell, SolveResult, SolverSettings

np = lazy_module("numpy")  # loaded at the first MILP
pulp = lazy_module("pulp")

MILP_SOLVERS = ("highs", "cbc")


@functools.cache
def solver_version(solver: str) -> str:
    """Name and version of the MILP back-end, e.g. ``highs 1.15.1 (pulp 3.3.2)``."""
    if solver == "highs":
        import highspy

        return f"highs {highspy.Highs().version()} (highspy)"
    try:  # the bundled binary prints "Version: 2.10.3" on start
        banner = subprocess.run(
            [pulp.PULP_CBC_CMD().path], input="quit\n", capture_output=True, text=True, timeout=10
        ).stdout
        version = re.search(r"Version:\s*(\S+)", banner)
    except (OSError, subprocess.SubprocessError):
        version = None
    return f"cbc {version.group(1) if version else 'unknown'} (pulp {pulp.__version__})"


def _passes(constraints: Any, record: Mapping[str, Any]) -> bool:
    for rule in constraints:
        value, op = record.get(rule.attribute), rule.op
        if op == "<=":
            ok = isinstance(value, int) and value <= rule.value
        elif op == ">=":
            ok = isinstance(value, int) and value >= rule.value
        elif op == "in":
            ok = value in rule.value
        elif op == "not_in":
            ok = value is not None and value not in rule.value
        else:
            raise KeyError(op)
        if not ok:
            return False
    return True


@dataclass(frozen=True)
class Row:
    """``sum(coefficient * column) sense rhs`` with sense one of ``<=``, ``>=``, ``==``."""

    name: str
    terms: tuple[tuple[int, int], ...]  # (column, coefficient)
    sense: str
    rhs: int


class MilpModel:
    """Binary columns y[(row, col, id)] for the locally valid candidates, one row "exactly
    one per hidden cell", and the rule rows; built once, then asked several questions."""

    def __init__(self, task: Task, settings: SolverSettings | None = None, solver: str = "highs") -> None:
        if solver not in MILP_SOLVERS:
            raise UserError(f"MILP solver {solver!r} is unknown; use one of {MILP_SOLVERS}")
        self.task = task
        self.settings = settings or SolverSettings()
        self.solver = solver
        self.options: dict[Cell, list[str]] = {
            (s.row, s.col): [c for c in s.candidates if _passes(s.constraints, task.items[c])]
            for s in task.slots
        }
        self.columns = [(cell, i) for cell, ids in self.options.items() for i in ids]
        self.column = {key: n for n, key in enumerate(self.columns)}
        self.rows = [
            Row(f"one_{r}_{c}", tuple((self.column[((r, c), i)], 1) for i in ids), "==", 1)
            for (r, c), ids in self.options.items()
        ]
        for number, rule in enumerate(task.global_constraints):
            sense = "<=" if rule.kind in (RuleKind.SUM_MAX, RuleKind.REPEAT_MAX, RuleKind.COUNT_MAX) else ">="
            for name, constant, terms in self._rule_rows(rule):
                self.rows.append(Row(f"g{number}_{name}", terms, sense, rule.bound - constant))

    def _rule_rows(self, rule: Any) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
        out = []
        for number, cells in enumerate(rule_groups(rule, self.task.rows, self.task.cols)):
            if rule.kind == RuleKind.REPEAT_MAX:
                # one row per value the group's options and visible cells take (in sorted
                # order): the visible cells that hold it, the columns that choose it (in cell
                # order), read in one pass over the group
                held: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
                for r, c in cells:
                    visible = self.task.grid[r][c]
                    if visible is not None:
                        held.setdefault(str(self.task.items[visible][rule.attribute]), ([0], []))[0][0] += 1
                        continue
                    for i in self.options[(r, c)]:
                        entry = held.setdefault(str(self.task.items[i][rule.attribute]), ([0], []))
                        entry[1].append((self.column[((r, c), i)], 1))
                for k, value in enumerate(sorted(held)):
                    out.append((f"{number}_v{k}", held[value][0][0], tuple(held[value][1])))
            else:
                out.append((str(number), *self._sum(cells, lambda rec: _coefficient(rule, rec))))
        return out

    def _sum(self, cells: Sequence[Cell], coef: Any) -> tuple[int, tuple[tuple[int, int], ...]]:
        constant, terms = 0, []
        for r, c in cells:
            visible = self.task.grid[r][c]
            if visible is not None:
                constant += coef(self.task.items[visible])
            else:
                terms += [(self.column[((r, c), i)], coef(self.task.items[i])) for i in self.options[(r, c)]]
        return constant, tuple((column, value) for column, value in terms if value)

    def _ask(
        self,
        extra: list[Row],
        objective: dict[int, int],
        maximize: bool,
        hint: Mapping[Cell, str] | None = None,
    ) -> SolveResult:
        if any(_constant_row_fails(row) for row in self.rows + extra):
            # decided without a solver (no solve, no time): a row of no column that fails (a
            # hidden cell with no option its slot rules allow; visible cells that alone break
            # a rule). A solver handed a model with no column answers "empty model", no proof.
            return SolveResult(INFEASIBLE, 0.0)
        start = time.perf_counter()
        solve = _solve_highs if self.solver == "highs" else _solve_cbc
        ones = None  # the hint's columns, when every choice of it is one of the model's
        if hint is not None and all((cell, i) in self.column for cell, i in hint.items()):
            ones = [self.column[(cell, i)] for cell, i in hint.items()]
        status, values, value = solve(
            len(self.columns), self.rows + extra, objective, maximize, self.settings, ones
        )
        wall_ms = (time.perf_counter() - start) * 1000.0
        if status != FEASIBLE:
            return SolveResult(status, wall_ms)
        chosen = {cell: i for (cell, i), v in zip(self.columns, values, strict=True) if v > 0.5}
        return SolveResult(FEASIBLE, wall_ms, chosen, int(round(value)))

    def truth_feasible(self, truth: Mapping[Cell, str]) -> SolveResult:
        """Solve with every hidden cell fixed to its truth; FEASIBLE when the truth meets every rule."""
        if any(truth[cell] not in ids for cell, ids in self.options.items()):
            return SolveResult(INFEASIBLE, 0.0)
        fixed = [
            Row(f"fix_{r}_{c}", ((self.column[((r, c), i)], 1),), "==", 1) for (r, c), i in truth.items()
        ]
        return self._ask(fixed, {}, maximize=False)

    def other_completion(self, truth: Mapping[Cell, str]) -> SolveResult:
        """Solve for a completion that differs from ``truth`` in at least one hidden cell."""
        same = tuple((self.column[(cell, i)], 1) for cell, i in truth.items() if (cell, i) in self.column)
        return self._ask([Row("not_truth", same, "<=", len(self.options) - 1)], {}, maximize=False)

    def most_decoys(
        self, decoys: Mapping[Cell, list[str]], hint: Mapping[Cell, str] | None = None
    ) -> SolveResult:
        """The most decoys any feasible completion uses (``objective``; 0 is the proof).
        ``hint``: a completion HiGHS starts from (the truth), see :func:`_solve_highs`."""
        used = {
            self.column[(cell, i)]: 1 for cell, ids in decoys.items() for i in ids if (cell, i) in self.column
        }
        return self._ask([], used, maximize=True, hint=hint)


Outcome = tuple[str, list[float], float]


def _constant_row_fails(row: Row) -> bool:
    """Whether ``row`` has no column left and its constant side breaks it (``0 == 1``)."""
    if row.terms:
        return False
    return {"<=": 0 > row.rhs, ">=": 0 < row.rhs, "==": row.rhs != 0}[row.sense]


def _solve_highs(
    columns: int,
    rows: list[Row],
    objective: dict[int, int],
    maximize: bool,
    settings: SolverSettings,
    start: list[int] | None = None,
) -> Outcome:
    """Solve with HiGHS. ``start``: the columns set to 1 in a solution to start from. HiGHS
    checks it against every row and keeps it only when it is feasible; it then bounds the
    search (the truth's 0 decoys: no node whose bound is below 1 is explored), while the
    optimum is still proved by the search's own bound, so a start never turns a solve's
    verdict. It saved a quarter of the cross-check's solving time on the default release."""
    import highspy

    highs = highspy.Highs()
    for option, value in (
        ("output_flag", False),
        ("threads", 1),
        ("random_seed", settings.seed),
        ("time_limit", float(settings.time_limit_s)),
        # primal heuristics only, never part of a proof (a solution they find is one branching
        # finds too; the bound that proves the optimum is the search's): feasibility jump's
        # set-up costs about 11 ms a solve, more than most of these small models take to solve
        # whole, and the sub-MIP and rounding heuristics were half the time of the one solve in
        # six that branches (0.9x the cross-check's CPU on the default release without them)
        ("mip_heuristic_run_feasibility_jump", False),
        ("mip_heuristic_effort", 0.0),
        ("mip_heuristic_run_rins", False),
        ("mip_heuristic_run_rens", False),
        ("mip_heuristic_run_root_reduced_cost", False),
        ("mip_heuristic_run_zi_round", False),
        ("mip_heuristic_run_shifting", False),
    ):
        if highs.setOptionValue(option, value) != highspy.HighsStatus.kOk:  # a misspelt option
            raise RuntimeError(f"HiGHS refused the option {option}={value!r}")
    inf = highspy.kHighsInf
    cost = np.zeros(columns)
    for n, value in objective.items():
        cost[n] = value
    highs.addCols(columns, cost, np.zeros(columns), np.ones(columns), 0, [], [], [])
    highs.changeColsIntegrality(
        columns, np.arange(columns, dtype=np.int32), np.full(columns, highspy.HighsVarType.kInteger)
    )
    low = np.array([-inf if row.sense == "<=" else row.rhs for row in rows], dtype=float)
    high = np.array([inf if row.sense == ">=" else row.rhs for row in rows], dtype=float)
    starts = np.cumsum([0] + [len(row.terms) for row in rows[:-1]], dtype=np.int32)
    indices = np.array([c for row in rows for c, _ in row.terms], dtype=np.int32)
    values = np.array([v for row in rows for _, v in row.terms], dtype=float)
    highs.addRows(len(rows), low, high, len(indices), starts, indices, values)
    if maximize:
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    if start is not None:
        solution = highspy.HighsSolution()
        values = np.zeros(columns)
        values[start] = 1.0
        solution.col_value = list(values)
        solution.value_valid = True
        highs.setSolution(solution)
    highs.run()
    status = highs.getModelStatus()
    # Every column is binary, so the problem is bounded: "unbounded or infeasible" (a presolve
    # verdict) means infeasible.
    if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return INFEASIBLE, [], 0.0
    if status == highspy.HighsModelStatus.kOptimal:
        return FEASIBLE, list(highs.getSolution().col_value), highs.getInfo().objective_function_value
    return UNKNOWN, [], 0.0


def _solve_cbc(
    columns: int,
    rows: list[Row],
    objective: dict[int, int],
    maximize: bool,
    settings: SolverSettings,
    start: list[int] | None = None,  # not used: CBC through PuLP starts from nothing
) -> Outcome:
    problem = pulp.LpProblem("grid_task", pulp.LpMaximize if maximize else pulp.LpMinimize)
    y = [pulp.LpVariable(f"y{n}", cat="Binary") for n in range(columns)]
    problem += pulp.LpAffineExpression([(y[n], v) for n, v in objective.items()]), "objective"
    for row in rows:
        expression = pulp.LpAffineExpression([(y[c], v) for c, v in row.terms])
        sense = {"<=": pulp.LpConstraintLE, ">=": pulp.LpConstraintGE, "==": pulp.LpConstraintEQ}
        problem += pulp.LpConstraint(expression, sense[row.sense], row.name, row.rhs)
    # No `threads` option: with "-threads 1" the bundled CBC starts a worker thread that
    # sometimes waits 10 s to start (seen: "Thread 0 ... waiting to start 10.0"), which
    # turned quick proofs into time-outs. Without it CBC runs single-threaded anyway.
    # No preprocessing: when the time limit interrupts CBC 2.10.3's preprocessing it can say
    # "Pre-processing says infeasible or unbounded" ("Integer infeasible") of a model that has
    # solutions -- seen on tasks with a second completion under millisecond limits, about one
    # solve in thirty: a uniqueness "proof" from a time-out. Without it a time-out is "Stopped
    # on time" (UNKNOWN). (The same message on a feasible MILP is issue 7's.)
    # CBC 2.10.3 without preprocessing crashes (a segmentation fault, which PuLP reports as
    # "Error while trying to execute") on some small integer-infeasible models, e.g. one cell
    # whose options weigh 1, 2 and 0 with a window [1, 1] and the weight-1 option excluded.
    # Then the model is solved again with preprocessing, and its "infeasible" is trusted only
    # when that solve ended well inside the time limit (preprocessing was not interrupted).
    # PuLP writes the model and CBC's solution next to each other in the temporary folder and
    # removes them after a solve, but not after a crash: each solve gets a folder of its own,
    # removed however the solve ends (a crash left two files in /tmp for every one).
    with tempfile.TemporaryDirectory(prefix="gridbench-cbc-") as folder:
        try:
            problem.solve(_cbc(folder, settings.time_limit_s, ["preprocess off"]))
        except pulp.PulpSolverError:
            started = time.perf_counter()
            try:
                problem.solve(_cbc(folder, settings.time_limit_s, []))
            except pulp.PulpSolverError:
                return UNKNOWN, [], 0.0
            if problem.sol_status == pulp.LpSolutionInfeasible or problem.status == -1:
                inside = time.perf_counter() - started < 0.5 * float(settings.time_limit_s)
                return (INFEASIBLE if inside else UNKNOWN), [], 0.0
    if problem.sol_status == pulp.LpSolutionInfeasible or problem.status == -1:
        return INFEASIBLE, [], 0.0
    if problem.sol_status == pulp.LpSolutionOptimal:
        return FEASIBLE, [v.value() or 0.0 for v in y], float(pulp.value(problem.objective) or 0)
    return UNKNOWN, [], 0.0


def _cbc(folder: str, limit: float, options: list[str]) -> Any:
    """PuLP's CBC command with its files in ``folder``."""
    command = pulp.PULP_CBC_CMD(msg=False, timeLimit=limit, options=options)
    command.tmpDir = folder
    return command


def _coefficient(rule: Any, record: Mapping[str, Any]) -> int:
    value = record[rule.attribute]
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return int(value)
    if rule.kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX):
        return 1 if value == rule.equals else 0
    return 1 if int(value) >= int(rule.at_least) else 0


def crosscheck(
    task: Task,
    truth: Mapping[Cell, str],
    decoys: Mapping[Cell, list[str]],
    settings: SolverSettings | None = None,
    solver: str = "highs",
) -> CrossCheck:
    """The MILP's verdict on the truth and the decoys, with a status per solve.

    ``most_decoys_used`` is the optimum of "use as many decoys as possible" over the feasible
    completions. When the model's own locally valid options of each hidden cell are exactly
    its truth and its decoys, a decoy is every way a cell can leave the truth, so one solve
    proves everything: an optimum of 0 is reached only by the all-truth completion (the truth
    is feasible), and no other completion exists (it would use a decoy). Otherwise, or when
    that solve does not return 0, three separate solves (truth fixed; "not the truth"; most
    decoys) say which proof fails and give a counterexample."""
    model = MilpModel(task, settings, solver)
    exact = all(
        truth[cell] in ids and set(ids) - {truth[cell]} == set(decoys.get(cell, ()))
        for cell, ids in model.options.items()
    )
    if exact:
        most = model.most_decoys(decoys, hint=truth)
        if most.status == FEASIBLE and most.objective == 0:
            return CrossCheck(
                solver=solver,
                solver_version=solver_version(solver),
                truth_feasible=True,
                unique=True,
                decoys_infeasible=True,
                most_decoys_used=0,
                statuses={"most_decoys": most.status},
                ok=True,
                counterexample=None,
            )
    truth_result = model.truth_feasible(truth)
    other = model.other_completion(truth)
    most = model.most_decoys(decoys, hint=truth)
    decoys_ok = most.status == FEASIBLE and most.objective == 0
    counterexample = None
    if other.status == FEASIBLE and other.solution is not None:
        counterexample = {f"{r},{c}": i for (r, c), i in sorted(other.solution.items())}
    return CrossCheck(
        solver=solver,
        solver_version=solver_version(solver),
        truth_feasible=truth_result.status == FEASIBLE,
        unique=other.status == INFEASIBLE,
        decoys_infeasible=decoys_ok,
        most_decoys_used=most.objective if most.status == FEASIBLE else None,
        statuses={"truth": truth_result.status, "other": other.status, "most_decoys": most.status},
        ok=truth_result.status == FEASIBLE and other.status == INFEASIBLE and decoys_ok,
        counterexample=counterexample,
    )


def crosscheck_answer(
    task: Task, answer: Answer, settings: SolverSettings | None = None, solver: str = "highs"
) -> CrossCheck:
    """:func:`crosscheck` of an answer file's truth and decoys."""
    decoys = {(role.row, role.col): list(role.decoys) for role in answer.roles if role.decoys}
    return crosscheck(task, answer.truth_choice(), decoys, settings, solver)
