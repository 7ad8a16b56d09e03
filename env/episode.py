"""One episode: the state of one agent on one task, answered from the task file alone.

Every tool call returns ``{"status", "message", "data"}``; status is ``ok``, ``error`` (the
call was invalid: nothing changed, nothing consumed), ``failed`` (an injected tool failure:
nothing changed, nothing consumed) or ``budget_exhausted``. Nothing an agent sends raises.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any

from env.budgets import UNLIMITED, EnvSettings
from env.tools import ArgumentError, Tool, tools_for
from solvers.checker import check_global, slot_rule_holds
from solvers.task import Task

Cell = tuple[int, int]
NUMERIC_OPS = (">", ">=", "=", "<", "<=")
CATEGORY_OPS = ("=", "in", "not_in")


def _result(status: str, message: str, data: Any = None) -> dict[str, Any]:
    return {"status": status, "message": message, "data": data}


class Episode:
    """The environment of one task. Build many at once: episodes share nothing mutable."""

    def __init__(self, task: Task, settings: EnvSettings | None = None, seed: int = 0,
                 record: bool = False) -> None:  # fmt: skip
        self.task = task
        self.trace: list[dict[str, Any]] | None = [] if record else None
        self.settings = settings or EnvSettings()
        self.settings.validate()
        self.tools: dict[str, Tool] = tools_for(task.domain)
        d = task.domain
        domain_tools = {f"query_{d}_candidate_from_attribute": "query_d_candidate_from_attribute",
                        f"get_{d}_item_info": "get_d_item_info",
                        f"get_{d}_item_attributes": "get_d_item_attributes",
                        f"check_{d}_slot_constraints": "check_d_slot_constraints",
                        f"check_{d}_global_constraints": "check_d_global_constraints"}  # fmt: skip
        self.handlers = {name: getattr(self, "_" + domain_tools.get(name, name))
                         for name in self.tools}  # fmt: skip
        self.slots = {(s.row, s.col): s for s in task.slots}
        self.grid: list[list[str | None]] = [list(row) for row in task.grid]
        self.visible = {item for row in task.grid for item in row if item is not None}
        self.attributes = self._attribute_kinds()
        hidden = len(task.slots)
        self.queries_left = {cell: self.settings.queries_for(len(slot.constraints), hidden)
                             for cell, slot in self.slots.items()}  # fmt: skip
        self.checks_left = self.settings.checks_for(hidden)
        digest = hashlib.sha256(f"{task.task_id}|{self.settings.seed}|{seed}".encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.calls: Counter[str] = Counter()
        self.invalid = self.failures = self.steps = 0
        self.queries_used = self.checks_used = 0
        self.finished = False

    def _attribute_kinds(self) -> dict[str, str]:
        kinds: dict[str, str] = {}
        for item in self.task.items.values():
            for key, value in item.items():
                if key not in ("id", "name"):
                    kinds.setdefault(key, "category" if isinstance(value, str) else "number")
        return kinds

    # The single entry point -------------------------------------------------------------

    def call(self, name: Any, arguments: Any = None) -> dict[str, Any]:
        """Run one tool call. Never raises; an invalid call consumes nothing."""
        self.steps += 1
        try:
            result = self._call(name, arguments)
        except Exception as error:  # the environment must survive anything an agent sends
            self.invalid += 1
            result = _result("error", f"internal error handled: {type(error).__name__}: {error}")
        if self.trace is not None:
            self.trace.append({"tool": name if isinstance(name, str) else repr(name),
                               "arguments": arguments if isinstance(arguments, dict | str | None)
                               else repr(arguments), "status": result["status"]})  # fmt: skip
        return result

    def _call(self, name: Any, arguments: Any) -> dict[str, Any]:
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self.invalid += 1
            return _result("error", f"unknown tool {name!r}; tools: {sorted(self.tools)}")
        self.calls[tool.name] += 1
        if self.finished:
            self.invalid += 1
            return _result("error", "the episode is over (done was called)")
        try:
            args = tool.parse(arguments)
            handler = self.handlers[tool.name]
            self._validate(tool.name, args)
        except ArgumentError as error:
            self.invalid += 1
            return _result("error", str(error))
        if tool.name != "done" and self.settings.failure_rate and \
                self.rng.random() < self.settings.failure_rate:  # fmt: skip
            self.failures += 1
            return _result("failed", "the tool failed this time; nothing changed, try again")
        return handler(**args)

    def _validate(self, name: str, args: dict[str, Any]) -> None:
        if "row" in args:
            row, col = args["row"], args["col"]
            if not (0 <= row < self.task.rows and 0 <= col < self.task.cols):
                raise ArgumentError(f"cell ({row}, {col}) is outside the {self.task.rows}x"
                                    f"{self.task.cols} grid (rows 0..{self.task.rows - 1}, "
                                    f"cols 0..{self.task.cols - 1})")  # fmt: skip
            if name != "get_slot_id" and (row, col) not in self.slots:
                raise ArgumentError(f"cell ({row}, {col}) is fixed, not hidden; hidden cells: "
                                    f"{sorted(self.slots)}")  # fmt: skip

    # Common tools -----------------------------------------------------------------------

    def _set_slot(self, row: int, col: int, id: str | None) -> dict[str, Any]:  # noqa: A002
        slot = self.slots[(row, col)]
        if id is not None and id not in slot.candidates:
            self.invalid += 1
            return _result("error", f"{id!r} is not a candidate of cell ({row}, {col}); find "
                           f"candidates with query_{self.task.domain}_candidate_from_attribute")
        self.grid[row][col] = id
        return _result("ok", f"cell ({row}, {col}) {'cleared' if id is None else 'set to ' + id}",
                       {"row": row, "col": col, "id": id})  # fmt: skip

    def _get_current_grid_state(self) -> dict[str, Any]:
        empty = [list(c) for c in sorted(self.slots) if self.grid[c[0]][c[1]] is None]
        return _result("ok", f"{len(empty)} hidden cells still empty",
                       {"grid": [list(row) for row in self.grid], "empty_cells": empty})

    def _get_slot_id(self, row: int, col: int) -> dict[str, Any]:
        return _result("ok", "", {"row": row, "col": col, "id": self.grid[row][col]})

    def _get_hidden_slot_query_budget(self, row: int, col: int) -> dict[str, Any]:
        left = self.queries_left[(row, col)]
        return _result("ok", "", {"remaining": None if left == UNLIMITED else left,
                                  "unlimited": left == UNLIMITED})  # fmt: skip

    def _get_global_check_budget(self) -> dict[str, Any]:
        left = self.checks_left
        return _result("ok", "", {"remaining": None if left == UNLIMITED else left,
                                  "unlimited": left == UNLIMITED})  # fmt: skip

    def _done(self) -> dict[str, Any]:
        self.finished = True
        empty = sum(self.grid[r][c] is None for r, c in self.slots)
        return _result("ok", f"episode finished with {empty} empty hidden cells", {"empty": empty})

    # Domain tools -----------------------------------------------------------------------

    def _query_d_candidate_from_attribute(self, row: int, col: int, field: str, operator: str,
                                          value: Any) -> dict[str, Any]:  # fmt: skip
        kind = self.attributes.get(field)
        if kind is None:
            self.invalid += 1
            return _result("error", f"unknown field {field!r}; fields: {sorted(self.attributes)}")
        allowed = NUMERIC_OPS if kind == "number" else CATEGORY_OPS
        if operator not in allowed:
            self.invalid += 1
            return _result("error", f"operator {operator!r} is not allowed on {kind} field "
                           f"{field!r}; allowed: {list(allowed)}")  # fmt: skip
        value, problem = self._query_value(kind, operator, value)
        if problem:
            self.invalid += 1
            return _result("error", problem)
        left = self.queries_left[(row, col)]
        if left == 0:
            return _result("budget_exhausted", f"no queries left for cell ({row}, {col})")
        if left != UNLIMITED:
            self.queries_left[(row, col)] = left - 1
        self.queries_used += 1
        matches = [{"id": i, field: self.task.items[i][field]}
                   for i in self.slots[(row, col)].candidates
                   if _matches(self.task.items[i][field], operator, value)]  # fmt: skip
        return _result("ok", f"{len(matches)} candidates match", {"candidates": matches})

    def _query_value(self, kind: str, operator: str, value: Any) -> tuple[Any, str]:
        if kind == "number":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if not isinstance(value, int):
                return value, f"value must be an integer for a number field, got {value!r}"
            return value, ""
        if operator in ("in", "not_in"):
            value = [value] if isinstance(value, str) else value
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                return value, f"operator {operator!r} needs a list of categories, got {value!r}"
            return value, ""
        if not isinstance(value, str):
            return value, f"value must be a category string, got {value!r}"
        return value, ""

    def _get_d_item_info(self, id: str) -> dict[str, Any]:  # noqa: A002
        if id not in self.visible:
            self.invalid += 1
            return _result("error", f"{id!r} is not an item fixed in the grid; candidates are "
                           f"read with query_{self.task.domain}_candidate_from_attribute")
        return _result("ok", "", dict(self.task.items[id]))

    def _get_d_item_attributes(self, ids: list[str], field: str) -> dict[str, Any]:
        unknown = [i for i in ids if i not in self.visible]
        if unknown or field not in self.attributes:
            self.invalid += 1
            problem = (f"not items fixed in the grid: {unknown}" if unknown
                       else f"unknown field {field!r}; fields: {sorted(self.attributes)}")
            return _result("error", problem)
        return _result("ok", "", {i: self.task.items[i][field] for i in ids})

    def _check_d_slot_constraints(self, row: int, col: int) -> dict[str, Any]:
        item_id = self.grid[row][col]
        if item_id is None:
            self.invalid += 1
            return _result("error", f"cell ({row}, {col}) is empty; set_slot first")
        item = self.task.items[item_id]
        results = [{**rule.to_dict(), "satisfied": slot_rule_holds(rule, item)}
                   for rule in self.slots[(row, col)].constraints]  # fmt: skip
        ok = all(r["satisfied"] for r in results)
        return _result("ok", "all slot constraints hold" if ok else "a slot constraint fails",
                       {"satisfied": ok, "constraints": results})  # fmt: skip

    def _check_d_global_constraints(self) -> dict[str, Any]:
        if self.checks_left == 0:
            return _result("budget_exhausted", "no global checks left")
        if self.checks_left != UNLIMITED:
            self.checks_left -= 1
        self.checks_used += 1
        statuses = check_global(self.task, self.grid)
        violated = sorted(name for name, s in statuses.items() if s == "violated")
        complete = all(self.grid[r][c] is not None for r, c in self.slots)
        return _result("ok", f"{len(violated)} violated" if violated else "no rule violated",
                       {"rules": statuses, "violated": violated, "complete": complete,
                        "all_satisfied": complete and not violated})  # fmt: skip


def _matches(actual: Any, operator: str, value: Any) -> bool:
    if operator == "in":
        return actual in value
    if operator == "not_in":
        return actual not in value
    if operator == "=":
        return actual == value
    if isinstance(actual, str):
        return False
    return {">": actual > value, ">=": actual >= value, "<": actual < value,
            "<=": actual <= value}[operator]  # fmt: skip
