"""CP-SAT model of a task, built from the task data alone, and the proofs run on it.

One Boolean per (hidden cell, candidate that passes the cell's slot rules), exactly one per
cell; every global rule becomes linear constraints over those Booleans plus the constants of
the visible cells. Proofs use assumption literals on one model, so a task is modelled once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gridbench_core.lazy import lazy_module
from gridbench_core.task import GlobalRule, Task
from gridbench_core.vocabulary import RuleKind
from solvers.checker import locally_valid_candidates, rule_groups
from solvers.results import (
    FEASIBLE,
    INFEASIBLE,
    UNKNOWN,
    Cell,
    SolveResult,
    SolverSettings,
)

SOLVER_NAME = "ortools-cp-sat"
if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = lazy_module("ortools.sat.python.cp_model")  # loaded at the first model


def _version() -> str:
    import ortools  # the package's __init__ only (the solver itself loads at the first model)

    return str(getattr(ortools, "__version__", "unknown"))


SOLVER_VERSION = _version()
Literal = Any  # a CP-SAT Boolean variable or its negation


class CpSatModel:
    """The CP-SAT model of ``task``; ``truth`` (optional) enables the uniqueness no-good."""

    def __init__(
        self, task: Task, settings: SolverSettings | None = None, truth: Mapping[Cell, str] | None = None
    ) -> None:
        self.task = task
        self.settings = settings or SolverSettings()
        self.model = cp_model.CpModel()
        self.choice: dict[Cell, dict[str, cp_model.IntVar]] = {}
        for slot in task.slots:
            cell = (slot.row, slot.col)
            self.choice[cell] = {
                item_id: self.model.new_bool_var(f"x_{slot.row}_{slot.col}_{item_id}")
                for item_id in locally_valid_candidates(task, slot)
            }
            self.model.add_exactly_one(self.choice[cell].values())
        self.relax: dict[str, cp_model.IntVar] = {}
        self.loosen: dict[str, cp_model.IntVar] = {}
        self.rows: dict[str, list[tuple[Any, int, bool]]] = {}  # each rule's linear rows
        for rule in task.global_constraints:
            self._add_rule(rule)
        self.forbid_truth = self.model.new_bool_var("forbid_truth")
        self.one_relaxed: Any = None
        if truth is not None:
            self._add_truth_nogood(truth)
        self.model.minimize(sum(self.loosen.values()))

    def _add_truth_nogood(self, truth: Mapping[Cell, str]) -> None:
        literals = [
            self.choice[cell][truth[cell]] for cell in self.choice if truth[cell] in self.choice[cell]
        ]
        self.model.add(cp_model.LinearExpr.sum(literals) <= len(self.choice) - 1).only_enforce_if(
            self.forbid_truth
        )

    def _add_rule(self, rule: GlobalRule) -> None:
        """Linear constraints for ``rule``; its bound can be loosened by ``loosen[name]``."""
        cells = self.task.rows * self.task.cols
        top = abs(rule.bound) + 2 * cells * max(1, self._largest_value(rule))
        loosen = self.model.new_int_var(0, top, f"loosen_{rule.name}")
        relax = self.model.new_bool_var(f"relax_{rule.name}")
        self.model.add(loosen == 0).only_enforce_if(relax.Not())
        self.loosen[rule.name], self.relax[rule.name] = loosen, relax
        rows = self.rows.setdefault(rule.name, [])
        for group in rule_groups(rule, self.task.rows, self.task.cols):
            for constant, terms in self._group_expressions(rule, group):
                expression: Any = cp_model.LinearExpr.weighted_sum(
                    [lit for lit, _ in terms] + [loosen],
                    [coef for _, coef in terms] + [-1 if rule.is_upper_bound else 1],
                )
                if rule.is_upper_bound:  # sum - loosen <= bound - constant
                    row = self.model.add(expression <= rule.bound - constant)
                else:  # sum + loosen >= bound - constant
                    row = self.model.add(expression >= rule.bound - constant)
                rows.append((row, constant, rule.is_upper_bound))

    def set_bound(self, rule_name: str, bound: int) -> None:
        """Give the rule ``rule_name`` the bound ``bound`` in this model (its task record is
        not changed): a generator narrowing or widening one bound solves again without building
        the model anew. The bound must stay within the range the model was built for (a loosening
        of at most ``cells`` times the largest value, plus the bound built with)."""
        for row, constant, upper in self.rows[rule_name]:
            row.proto.linear.domain[1 if upper else 0] = bound - constant

    def _largest_value(self, rule: GlobalRule) -> int:
        if rule.kind not in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
            return 1
        largest = self.__dict__.setdefault("_largest", {})  # per attribute: rules share them
        if rule.attribute not in largest:
            attribute = rule.attribute
            largest[attribute] = max(
                (abs(int(item[attribute])) for item in self.task.items.values()), default=1
            )
        return int(largest[rule.attribute])

    def _group_expressions(
        self, rule: GlobalRule, group: Sequence[Cell]
    ) -> list[tuple[int, list[tuple[Literal, int]]]]:
        """(constant, [(literal, coefficient)]) per linear row of one rule group."""
        if rule.kind == RuleKind.REPEAT_MAX:
            return self._value_counts(rule, group)
        return [self._contribution(group, lambda v: _weight(rule, v), rule)]

    def _value_counts(
        self, rule: GlobalRule, group: Sequence[Cell]
    ) -> list[tuple[int, list[tuple[Literal, int]]]]:
        """One row per value the group's options take: the visible cells that hold it and the
        literals that choose it, in the group's cell order (one pass over the options, not
        one per value: a grid-wide repeat cap of a 20x20 grid has thousands of values)."""
        rows: dict[object, tuple[list[int], list[tuple[Literal, int]]]] = {}
        for cell in group:
            fixed = self.task.grid[cell[0]][cell[1]]
            if fixed is not None:
                rows.setdefault(self.task.items[fixed][rule.attribute], ([0], []))[0][0] += 1
                continue
            for item_id, literal in self.choice[cell].items():
                rows.setdefault(self.task.items[item_id][rule.attribute], ([0], []))[1].append((literal, 1))
        return [(rows[value][0][0], rows[value][1]) for value in sorted(rows, key=str)]

    def _contribution(self, group: Sequence[Cell], weight, rule: GlobalRule):  # type: ignore[no-untyped-def]
        constant, terms = 0, []
        grid, items, attribute, choice = self.task.grid, self.task.items, rule.attribute, self.choice
        for cell in group:
            fixed = grid[cell[0]][cell[1]]
            if fixed is not None:
                constant += weight(items[fixed][attribute])
                continue
            for item_id, literal in choice[cell].items():
                coefficient = weight(items[item_id][attribute])
                if coefficient:
                    terms.append((literal, coefficient))
        return constant, terms

    def solve(self, assumptions: Sequence[Literal], relaxed: str | None = None) -> SolveResult:
        """Solve under assumption literals; every rule other than ``relaxed`` is exact
        (``relaxed="*"``: any one rule may be, the one that gives the smallest loosening)."""
        fixed_rules = (
            [] if relaxed == "*" else [self.relax[name].Not() for name in self.relax if name != relaxed]
        )
        self.model.clear_assumptions()
        self.model.add_assumptions(list(assumptions) + fixed_rules)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = self.settings.workers
        solver.parameters.random_seed = self.settings.seed
        solver.parameters.max_time_in_seconds = self.settings.time_limit_s
        if self.settings.deterministic_limit is not None:
            solver.parameters.max_deterministic_time = self.settings.deterministic_limit
        solver.parameters.cp_model_presolve = self.settings.presolve
        solver.parameters.linearization_level = self.settings.linearization
        # Ctrl-C is Python's: CP-SAT would otherwise catch it, end the search as if its time
        # limit had passed (an UNKNOWN that generation re-draws, so Ctrl-C never stops it) and
        # leave SIGINT at its default action (a later Ctrl-C kills without a word)
        solver.parameters.catch_sigint_signal = False
        start = time.perf_counter()
        status = solver.solve(self.model)
        wall_ms = (time.perf_counter() - start) * 1000.0
        if status == cp_model.INFEASIBLE:
            return SolveResult(INFEASIBLE, wall_ms)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            solution = {
                cell: next(i for i, lit in options.items() if solver.boolean_value(lit))
                for cell, options in self.choice.items()
            }
            objective = int(round(solver.objective_value)) if status == cp_model.OPTIMAL else None
            if relaxed is not None and objective is None:
                return SolveResult(UNKNOWN, wall_ms, solution)
            return SolveResult(FEASIBLE, wall_ms, solution, objective)
        return SolveResult(UNKNOWN, wall_ms)

    # The proofs -----------------------------------------------------------------------

    def literal(self, cell: Cell, item_id: str) -> Literal | None:
        """The choice literal, or None when the item fails the cell's slot rules."""
        return self.choice[cell].get(item_id)

    def check_assignment(self, assignment: Mapping[Cell, str]) -> SolveResult:
        """Is this full assignment a feasible completion? (FEASIBLE / INFEASIBLE)"""
        literals = [self.literal(cell, item_id) for cell, item_id in assignment.items()]
        if any(literal is None for literal in literals):
            return SolveResult(INFEASIBLE, 0.0)
        return self.solve(literals)

    def other_completion(self) -> SolveResult:
        """Search a completion other than the truth; INFEASIBLE proves uniqueness."""
        return self.solve([self.forbid_truth])

    def item_feasible(self, cell: Cell, item_id: str) -> SolveResult:
        """Is there a feasible completion with ``item_id`` in ``cell``?"""
        literal = self.literal(cell, item_id)
        if literal is None:
            return SolveResult(INFEASIBLE, 0.0)
        return self.solve([literal])

    def some_feasible(self, items: Sequence[tuple[Cell, str]]) -> SolveResult:
        """Is there a feasible completion using at least one of ``items``? INFEASIBLE proves
        every one of them wrong in a single solve."""
        literals = [lit for cell, item_id in items if (lit := self.literal(cell, item_id)) is not None]
        if not literals:
            return SolveResult(INFEASIBLE, 0.0)
        enable = self.model.new_bool_var(f"some_of_{len(self.model.proto.variables)}")
        self.model.add_bool_or(literals).only_enforce_if(enable)
        return self.solve([enable])

    def least_loosening_to_ambiguity(self) -> SolveResult:
        """The smallest loosening of any single rule's bound that admits a completion other
        than the truth (``objective``), in one solve; INFEASIBLE when no single rule can."""
        if self.one_relaxed is None:
            self.one_relaxed = self.model.new_bool_var("one_relaxed")
            self.model.add(cp_model.LinearExpr.sum(list(self.relax.values())) <= 1).only_enforce_if(
                self.one_relaxed
            )
        return self.solve([self.forbid_truth, self.one_relaxed], relaxed="*")

    def loosening_to_ambiguity(self, rule_name: str) -> SolveResult:
        """Smallest loosening of one rule's bound that admits a completion other than the
        truth (``objective``); INFEASIBLE when no loosening of that rule alone does."""
        return self.solve([self.forbid_truth, self.relax[rule_name]], relaxed=rule_name)


def _weight(rule: GlobalRule, value: object) -> int:
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return int(value)  # type: ignore[call-overload]
    if rule.kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX):
        return int(value == rule.equals)
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        return int(int(value) >= int(rule.at_least or 0))  # type: ignore[call-overload]
    raise ValueError(f"unknown rule kind {rule.kind!r}")


__all__ = ["FEASIBLE", "INFEASIBLE", "SOLVER_NAME", "SOLVER_VERSION", "UNKNOWN", "CpSatModel"]
