"""CP-SAT model of a task, built from the task data alone, and the proofs run on it.

One Boolean per (hidden cell, candidate that passes the cell's slot rules), exactly one per
cell; every global rule becomes linear constraints over those Booleans plus the constants of
the visible cells. Proofs use assumption literals on one model, so a task is modelled once.

The model is written straight into CP-SAT's ``CpModelProto`` (its text form, parsed once in
C++) and solved by OR-Tools' own ``SolveWrapper``: the proto is the one ``cp_model.CpModel``
builds for the same calls (tests/solvers/test_cpsat_proto.py compares them), made about 3x
faster, and without importing ``cp_model``, which loads pandas (0.9 s in every process).
A literal is a variable's index, its negation ``~index`` (CP-SAT's ``-index - 1``).
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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


def _helper() -> Any:
    """OR-Tools' CP-SAT extension module, imported at the first model (so importing this
    module, or ``gridbench``, loads no solver)."""
    from ortools.sat.python import cp_model_helper

    return cp_model_helper


def _version() -> str:
    import ortools  # the package's __init__ only (the solver itself loads at the first model)

    return str(getattr(ortools, "__version__", "unknown"))


SOLVER_VERSION = _version()
# CP-SAT's presolve probing for the solves whose answer is a status only (the certificate's
# proofs): 0 proves them in about 0.7x the CPU of its default 2 on these models (measured on
# 5x5 to 20x20 tasks; the largest preset's proofs stay under 6% of the deterministic limit).
# Which solution a search finds depends on it, so the solves whose solution is used (repair's
# counterexamples, the measures' optimisation) keep the default: what a task is made of does
# not change.
PROOF_PROBING = 0
Literal = int  # a variable's index, or ~index for its negation
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _quoted(text: str) -> str:
    """``text`` as a protobuf text-format string (C escapes of its UTF-8 bytes)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out = []
    for byte in text.encode("utf-8"):
        if byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _ints(values: Sequence[int]) -> str:
    return ",".join(map(str, values))


class _Proto:
    """A CP model written as protobuf text, then parsed once (:meth:`parse`); later variables
    and constraints are merged into the parsed proto."""

    def __init__(self) -> None:
        self.variables: list[str] = []
        self.constraints: list[str] = []
        self.proto: Any = None

    def new_var(self, low: int, high: int, name: str) -> Literal:
        return self._append(self.variables, f"variables{{name:{_quoted(name)} domain:[{low},{high}]}}")

    def add(self, body: str, enforced_by: Sequence[Literal] = ()) -> int:
        """Add the constraint ``body`` (its oneof field), enforced by ``enforced_by``; its index."""
        enforcement = f"enforcement_literal:[{_ints(enforced_by)}] " if enforced_by else ""
        return self._append(self.constraints, f"constraints{{{enforcement}{body}}}")

    def _append(self, field: list[str], text: str) -> int:
        """Add ``text`` to ``field`` (and to the proto once parsed); the new entry's index."""
        field.append(text)
        if self.proto is not None:
            self.proto.merge_text_format(text)
        return len(field) - 1

    def linear(self, literals: Sequence[Literal], coefficients: Sequence[int], low: int, high: int) -> str:
        return f"linear{{vars:[{_ints(literals)}] coeffs:[{_ints(coefficients)}] domain:[{low},{high}]}}"

    def parse(self, objective: Sequence[Literal]) -> Any:
        """The parsed proto, with the objective ``minimize(sum(objective))``."""
        text = "".join(self.variables) + "".join(self.constraints)
        text += (
            f"objective{{vars:[{_ints(objective)}] coeffs:[{_ints([1] * len(objective))}] scaling_factor:1}}"
        )
        self.proto = _helper().CpModelProto()
        self.proto.parse_text_format(text)
        return self.proto


class CpSatModel:
    """The CP-SAT model of ``task``; ``truth`` (optional) enables the uniqueness no-good."""

    def __init__(
        self, task: Task, settings: SolverSettings | None = None, truth: Mapping[Cell, str] | None = None
    ) -> None:
        self.task = task
        self.settings = settings or SolverSettings()
        self._proto = _Proto()
        self.choice: dict[Cell, dict[str, Literal]] = {}
        for slot in task.slots:
            cell = (slot.row, slot.col)
            prefix = f"x_{slot.row}_{slot.col}_"
            self.choice[cell] = {
                item_id: self._proto.new_var(0, 1, prefix + item_id)
                for item_id in locally_valid_candidates(task, slot)
            }
            self._proto.add(f"exactly_one{{literals:[{_ints(list(self.choice[cell].values()))}]}}")
        self.relax: dict[str, Literal] = {}
        self.loosen: dict[str, Literal] = {}
        self.rows: dict[str, list[tuple[int, int, bool]]] = {}  # each rule's linear rows
        for rule in task.global_constraints:
            self._add_rule(rule)
        self.forbid_truth = self._proto.new_var(0, 1, "forbid_truth")
        self.one_relaxed: Literal | None = None
        if truth is not None:
            self._add_truth_nogood(truth)
        self.proto = self._proto.parse(list(self.loosen.values()))

    def _add_truth_nogood(self, truth: Mapping[Cell, str]) -> None:
        literals = [
            self.choice[cell][truth[cell]] for cell in self.choice if truth[cell] in self.choice[cell]
        ]
        self._proto.add(
            self._proto.linear(literals, [1] * len(literals), INT64_MIN, len(self.choice) - 1),
            [self.forbid_truth],
        )

    def _add_rule(self, rule: GlobalRule) -> None:
        """Linear constraints for ``rule``; its bound can be loosened by ``loosen[name]``."""
        cells = self.task.rows * self.task.cols
        top = abs(rule.bound) + 2 * cells * max(1, self._largest_value(rule))
        loosen = self._proto.new_var(0, top, f"loosen_{rule.name}")
        relax = self._proto.new_var(0, 1, f"relax_{rule.name}")
        self._proto.add(self._proto.linear([loosen], [1], 0, 0), [~relax])
        self.loosen[rule.name], self.relax[rule.name] = loosen, relax
        rows = self.rows.setdefault(rule.name, [])
        upper = rule.is_upper_bound
        for group in rule_groups(rule, self.task.rows, self.task.cols):
            for constant, terms in self._group_expressions(rule, group):
                literals = [lit for lit, _ in terms] + [loosen]
                coefficients = [coef for _, coef in terms] + [-1 if upper else 1]
                if upper:  # sum - loosen <= bound - constant
                    low, high = INT64_MIN, rule.bound - constant
                else:  # sum + loosen >= bound - constant
                    low, high = rule.bound - constant, INT64_MAX
                row = self._proto.add(self._proto.linear(literals, coefficients, low, high))
                rows.append((row, constant, upper))

    def set_bound(self, rule_name: str, bound: int) -> None:
        """Give the rule ``rule_name`` the bound ``bound`` in this model (its task record is
        not changed): a generator narrowing or widening one bound solves again without building
        the model anew. The bound must stay within the range the model was built for (a loosening
        of at most ``cells`` times the largest value, plus the bound built with)."""
        constraints = self.proto.constraints
        for row, constant, upper in self.rows[rule_name]:
            constraints[row].linear.domain[1 if upper else 0] = bound - constant

    def _largest_value(self, rule: GlobalRule) -> int:
        if rule.kind not in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
            return 1
        largest = self.__dict__.setdefault("_largest", {})  # per attribute: rules share them
        if rule.attribute not in largest:
            values = map(operator.itemgetter(rule.attribute), self.task.items.values())
            largest[rule.attribute] = max(map(abs, map(int, values)), default=1)
        return int(largest[rule.attribute])

    def _group_expressions(
        self, rule: GlobalRule, group: Sequence[Cell]
    ) -> list[tuple[int, list[tuple[Literal, int]]]]:
        """(constant, [(literal, coefficient)]) per linear row of one rule group."""
        if rule.kind == RuleKind.REPEAT_MAX:
            return self._value_counts(rule, group)
        return [self._contribution(group, _weigher(rule), rule)]

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

    def new_bool(self, name: str) -> Literal:
        """A new Boolean variable of the model."""
        return self._proto.new_var(0, 1, name)

    def solve(
        self, assumptions: Sequence[Literal], relaxed: str | None = None, proof: bool = False
    ) -> SolveResult:
        """Solve under assumption literals; every rule other than ``relaxed`` is exact
        (``relaxed="*"``: any one rule may be, the one that gives the smallest loosening).
        ``proof``: only the status is wanted (a proof's INFEASIBLE, or the one completion a
        full assignment is), never which solution is found, so CP-SAT's presolve skips its
        probing (:data:`PROOF_PROBING`)."""
        fixed_rules = [] if relaxed == "*" else [~self.relax[name] for name in self.relax if name != relaxed]
        self.proto.assumptions.clear()
        self.proto.assumptions.extend(list(assumptions) + fixed_rules)
        cmh = _helper()
        parameters = cmh.SatParameters()
        parameters.num_workers = self.settings.workers
        parameters.random_seed = self.settings.seed
        parameters.max_time_in_seconds = self.settings.time_limit_s
        if self.settings.deterministic_limit is not None:
            parameters.max_deterministic_time = self.settings.deterministic_limit
        parameters.cp_model_presolve = self.settings.presolve
        parameters.linearization_level = self.settings.linearization
        if proof:
            parameters.cp_model_probing_level = PROOF_PROBING
        # Ctrl-C is Python's: CP-SAT would otherwise catch it, end the search as if its time
        # limit had passed (an UNKNOWN that generation re-draws, so Ctrl-C never stops it) and
        # leave SIGINT at its default action (a later Ctrl-C kills without a word)
        parameters.catch_sigint_signal = False
        wrapper = cmh.SolveWrapper()
        wrapper.set_parameters(parameters)
        start = time.perf_counter()
        response = wrapper.solve(self.proto)
        wall_ms = (time.perf_counter() - start) * 1000.0
        status = response.status
        if status == cmh.CpSolverStatus.INFEASIBLE:
            return SolveResult(INFEASIBLE, wall_ms)
        if status in (cmh.CpSolverStatus.OPTIMAL, cmh.CpSolverStatus.FEASIBLE):
            values = response.solution
            solution = {
                cell: next(i for i, lit in options.items() if values[lit])
                for cell, options in self.choice.items()
            }
            objective = int(round(response.objective_value)) if status == cmh.CpSolverStatus.OPTIMAL else None
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
        return self.solve(literals, proof=True)  # type: ignore[arg-type]

    def other_completion(self, proof: bool = False) -> SolveResult:
        """Search a completion other than the truth; INFEASIBLE proves uniqueness (``proof``:
        only that status is wanted, not which other completion is found)."""
        return self.solve([self.forbid_truth], proof=proof)

    def item_feasible(self, cell: Cell, item_id: str) -> SolveResult:
        """Is there a feasible completion with ``item_id`` in ``cell``?"""
        literal = self.literal(cell, item_id)
        if literal is None:
            return SolveResult(INFEASIBLE, 0.0)
        return self.solve([literal], proof=True)

    def some_feasible(self, items: Sequence[tuple[Cell, str]]) -> SolveResult:
        """Is there a feasible completion using at least one of ``items``? INFEASIBLE proves
        every one of them wrong in a single solve."""
        literals = [lit for cell, item_id in items if (lit := self.literal(cell, item_id)) is not None]
        if not literals:
            return SolveResult(INFEASIBLE, 0.0)
        enable = self.new_bool(f"some_of_{len(self._proto.variables)}")
        self._proto.add(f"bool_or{{literals:[{_ints(literals)}]}}", [enable])
        return self.solve([enable], proof=True)

    def excluding(self, solution: Mapping[Cell, str]) -> Literal:
        """A literal that, assumed, forbids the completion ``solution`` (every one of its
        choices at once; each must be a choice of this model)."""
        differs = self.new_bool(f"differs_{len(self._proto.variables)}")
        literals = [~self.choice[cell][item_id] for cell, item_id in solution.items()]
        self._proto.add(f"bool_or{{literals:[{_ints(literals)}]}}", [differs])
        return differs

    def least_loosening_to_ambiguity(self) -> SolveResult:
        """The smallest loosening of any single rule's bound that admits a completion other
        than the truth (``objective``), in one solve; INFEASIBLE when no single rule can."""
        if self.one_relaxed is None:
            self.one_relaxed = self.new_bool("one_relaxed")
            relax = list(self.relax.values())
            self._proto.add(self._proto.linear(relax, [1] * len(relax), INT64_MIN, 1), [self.one_relaxed])
        return self.solve([self.forbid_truth, self.one_relaxed], relaxed="*")

    def loosening_to_ambiguity(self, rule_name: str) -> SolveResult:
        """Smallest loosening of one rule's bound that admits a completion other than the
        truth (``objective``); INFEASIBLE when no loosening of that rule alone does."""
        return self.solve([self.forbid_truth, self.relax[rule_name]], relaxed=rule_name)


def _weigher(rule: GlobalRule) -> Callable[[object], int]:
    """:func:`_weight` of ``rule`` as a function of the value alone (the rule's kind read once:
    a sum's weight is the value itself)."""
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return int  # type: ignore[return-value]
    return functools.partial(_weight, rule)


def _weight(rule: GlobalRule, value: object) -> int:
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return int(value)  # type: ignore[call-overload]
    if rule.kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX):
        return int(value == rule.equals)
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        return int(int(value) >= int(rule.at_least or 0))  # type: ignore[call-overload]
    raise ValueError(f"unknown rule kind {rule.kind!r}")


__all__ = ["FEASIBLE", "INFEASIBLE", "SOLVER_NAME", "SOLVER_VERSION", "UNKNOWN", "CpSatModel"]
