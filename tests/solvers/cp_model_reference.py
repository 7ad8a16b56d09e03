"""The CP-SAT model as OR-Tools' own ``cp_model.CpModel`` builds it: the reference that
``solvers.cpsat`` (which writes the proto directly, without ``cp_model`` and its pandas) must
match proto for proto (tests/solvers/test_cpsat_proto.py). This is the builder release 2.0.0
shipped with, kept for that comparison only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ortools.sat.python import cp_model

from gridbench_core.task import GlobalRule, Task
from gridbench_core.vocabulary import RuleKind
from solvers.checker import locally_valid_candidates, rule_groups
from solvers.cpsat import _weight

Cell = tuple[int, int]


class ReferenceModel:
    """``cp_model`` calls, in the order ``solvers.cpsat.CpSatModel`` makes them."""

    def __init__(self, task: Task, truth: Mapping[Cell, str] | None = None) -> None:
        self.task = task
        self.model = cp_model.CpModel()
        self.choice: dict[Cell, dict[str, Any]] = {}
        for slot in task.slots:
            cell = (slot.row, slot.col)
            self.choice[cell] = {
                item_id: self.model.new_bool_var(f"x_{slot.row}_{slot.col}_{item_id}")
                for item_id in locally_valid_candidates(task, slot)
            }
            self.model.add_exactly_one(self.choice[cell].values())
        self.relax: dict[str, Any] = {}
        self.loosen: dict[str, Any] = {}
        self.rows: dict[str, list[tuple[Any, int, bool]]] = {}
        for rule in task.global_constraints:
            self._add_rule(rule)
        self.forbid_truth = self.model.new_bool_var("forbid_truth")
        if truth is not None:
            literals = [self.choice[c][truth[c]] for c in self.choice if truth[c] in self.choice[c]]
            self.model.add(cp_model.LinearExpr.sum(literals) <= len(self.choice) - 1).only_enforce_if(
                self.forbid_truth
            )
        self.model.minimize(sum(self.loosen.values()))

    def _add_rule(self, rule: GlobalRule) -> None:
        cells = self.task.rows * self.task.cols
        largest = 1
        if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
            largest = max((abs(int(i[rule.attribute])) for i in self.task.items.values()), default=1)
        top = abs(rule.bound) + 2 * cells * max(1, largest)
        loosen = self.model.new_int_var(0, top, f"loosen_{rule.name}")
        relax = self.model.new_bool_var(f"relax_{rule.name}")
        self.model.add(loosen == 0).only_enforce_if(relax.Not())
        self.loosen[rule.name], self.relax[rule.name] = loosen, relax
        rows = self.rows.setdefault(rule.name, [])
        for group in rule_groups(rule, self.task.rows, self.task.cols):
            for constant, terms in self._group(rule, group):
                expression: Any = cp_model.LinearExpr.weighted_sum(
                    [lit for lit, _ in terms] + [loosen],
                    [coef for _, coef in terms] + [-1 if rule.is_upper_bound else 1],
                )
                if rule.is_upper_bound:
                    row = self.model.add(expression <= rule.bound - constant)
                else:
                    row = self.model.add(expression >= rule.bound - constant)
                rows.append((row, constant, rule.is_upper_bound))

    def _group(self, rule: GlobalRule, group: Sequence[Cell]) -> list[tuple[int, list[tuple[Any, int]]]]:
        grid, items = self.task.grid, self.task.items
        if rule.kind == RuleKind.REPEAT_MAX:
            rows: dict[object, tuple[list[int], list[tuple[Any, int]]]] = {}
            for cell in group:
                fixed = grid[cell[0]][cell[1]]
                if fixed is not None:
                    rows.setdefault(items[fixed][rule.attribute], ([0], []))[0][0] += 1
                    continue
                for item_id, literal in self.choice[cell].items():
                    rows.setdefault(items[item_id][rule.attribute], ([0], []))[1].append((literal, 1))
            return [(rows[v][0][0], rows[v][1]) for v in sorted(rows, key=str)]
        constant, terms = 0, []
        for cell in group:
            fixed = grid[cell[0]][cell[1]]
            if fixed is not None:
                constant += _weight(rule, items[fixed][rule.attribute])
                continue
            for item_id, literal in self.choice[cell].items():
                coefficient = _weight(rule, items[item_id][rule.attribute])
                if coefficient:
                    terms.append((literal, coefficient))
        return [(constant, terms)]

    def set_bound(self, rule_name: str, bound: int) -> None:
        for row, constant, upper in self.rows[rule_name]:
            row.proto.linear.domain[1 if upper else 0] = bound - constant

    def some_of(self, literals: list[Any]) -> Any:
        enable = self.model.new_bool_var(f"some_of_{len(self.model.proto.variables)}")
        self.model.add_bool_or(literals).only_enforce_if(enable)
        return enable

    def excluding(self, solution: Mapping[Cell, str]) -> Any:
        differs = self.model.new_bool_var(f"differs_{len(self.model.proto.variables)}")
        self.model.add_bool_or([self.choice[c][i].Not() for c, i in solution.items()]).only_enforce_if(
            differs
        )
        return differs

    def one_relaxed(self) -> Any:
        one = self.model.new_bool_var("one_relaxed")
        self.model.add(cp_model.LinearExpr.sum(list(self.relax.values())) <= 1).only_enforce_if(one)
        return one
