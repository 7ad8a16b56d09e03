"""One episode: the state of one agent on one task, answered from the task file alone.

Every tool call returns ``{"status", "message", "data"}``; status is ``ok``, ``error`` (the
call was invalid: nothing changed, nothing consumed), ``failed`` (an injected tool failure:
nothing changed, nothing consumed) or ``budget_exhausted``. Nothing an agent sends raises.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gridbench.env.tools import (
    MESSAGE_LIMIT,
    ArgumentError,
    Tool,
    bounded,
    bounded_int,
    clip,
    echo,
    int_text,
    tools_for,
)
from gridbench_core.budgets import MAX_SEED, UNLIMITED, EnvSettings
from gridbench_core.errors import UserError
from gridbench_core.task import Task
from gridbench_core.vocabulary import CATEGORY_QUERY_OPS, NUMERIC_QUERY_OPS
from solvers.checker import check_global, slot_rule_holds

Cell = tuple[int, int]
NUMERIC_OPS = NUMERIC_QUERY_OPS
CATEGORY_OPS = CATEGORY_QUERY_OPS


def _cells(count: int, kind: str = "hidden") -> str:
    """``"1 hidden cell"``, ``"3 hidden cells"``."""
    return f"{count} {kind} cell{'' if count == 1 else 's'}"


def _matching(count: int) -> str:
    """``"1 candidate matches"``, ``"0 candidates match"``, ``"3 candidates match"``."""
    return f"{count} candidate matches" if count == 1 else f"{count} candidates match"


def _result(status: str, message: str, data: Any = None) -> dict[str, Any]:
    return {"status": status, "message": message, "data": data}


def _recorded_name(name: Any) -> str:
    """A tool name as the transcript keeps it (anything else abbreviated)."""
    return name if isinstance(name, str) and len(name) <= 200 else echo(name)


def _recorded(arguments: Any) -> Any:
    """Arguments as the transcript keeps them: as sent when they are a JSON object, text or
    null of reasonable size and depth (they are written as JSON later); anything else, a
    100,000-deep nesting included, as an abbreviated ``repr``."""
    if isinstance(arguments, dict | str | None) and bounded(arguments, 32, 10_000, 1_000_000):
        return arguments
    return echo(arguments)


@dataclass(frozen=True)
class ToolNames:
    """The domain tools' names of one episode, built once (they are compared on every call)."""

    query: str
    item_info: str
    item_attributes: str
    slot_check: str
    global_check: str

    @staticmethod
    def of(domain: str) -> ToolNames:
        """The names of ``domain``'s tools."""
        return ToolNames(
            f"query_{domain}_candidate_from_attribute",
            f"get_{domain}_item_info",
            f"get_{domain}_item_attributes",
            f"check_{domain}_slot_constraints",
            f"check_{domain}_global_constraints",
        )


def _check_arguments(task: Any, settings: Any, seed: Any) -> None:
    """What an episode is built from, checked (a :class:`UserError` naming it, never an
    attribute error from deep inside): a Task, EnvSettings or None, a seed in 0..2**63-1."""
    if not isinstance(task, Task):
        raise UserError(
            f"Episode: pass a task (a gridbench_core.task.Task: record.episode() builds the episode of a "
            f"release record), got {type(task).__name__}"
        )
    if settings is not None and not isinstance(settings, EnvSettings):
        raise UserError(f"Episode: settings must be a gridbench.EnvSettings, got {type(settings).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"Episode: seed={str(seed)[:40]} must be a whole number in 0..{MAX_SEED}")


class Episode:
    """The environment of one task. Build many at once: episodes share nothing mutable."""

    def __init__(
        self, task: Task, settings: EnvSettings | None = None, seed: int = 0, record: bool = False
    ) -> None:
        _check_arguments(task, settings, seed)
        self.task = task
        self.trace: list[dict[str, Any]] | None = [] if record else None
        self.settings = settings or EnvSettings()
        self.settings.validate()
        self.tools: dict[str, Tool] = tools_for(task.domain)
        d = task.domain
        domain_tools = {
            f"query_{d}_candidate_from_attribute": "query_d_candidate_from_attribute",
            f"get_{d}_item_info": "get_d_item_info",
            f"get_{d}_item_attributes": "get_d_item_attributes",
            f"check_{d}_slot_constraints": "check_d_slot_constraints",
            f"check_{d}_global_constraints": "check_d_global_constraints",
        }
        self.names = ToolNames.of(d)
        self.handlers = {name: getattr(self, "_" + domain_tools.get(name, name)) for name in self.tools}
        self.slots = {(s.row, s.col): s for s in task.slots}
        self.grid: list[list[str | None]] = [list(row) for row in task.grid]
        self.visible = {item for row in task.grid for item in row if item is not None}
        self.attributes = self._attribute_kinds()
        hidden = len(task.slots)
        self.queries_left = {
            cell: self.settings.queries_for(len(slot.constraints), hidden)
            for cell, slot in self.slots.items()
        }
        self.checks_left = self.settings.checks_for(hidden)
        digest = hashlib.sha256(f"{task.task_id}|{self.settings.seed}|{seed}".encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.calls: Counter[str] = Counter()
        self.invalid = self.failures = self.steps = 0
        self.queries_used = self.checks_used = 0
        self.finished = self.truncated = False

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
            result = _result("error", f"internal error handled: {type(error).__name__}: {clip(str(error))}")
        if self.trace is not None:
            self.trace.append(
                {"tool": _recorded_name(name), "arguments": _recorded(arguments), "result": result}
            )
        return result

    def reject(self, message: str, raw: Any = None) -> dict[str, Any]:
        """Answer an action an adapter could not read as a tool call at all (free text sent to
        a gymnasium ``step``, say): it counts as a step and an invalid call, like any other."""
        self.steps += 1
        self.invalid += 1
        if self.steps > self.settings.max_steps and not self.finished:
            self.finished = self.truncated = True
            limit = self.settings.max_steps
            message = f"the step limit of {limit} tool calls is reached; the episode is over"
        result = _result("error", clip(message, MESSAGE_LIMIT))
        if self.trace is not None:
            self.trace.append({"tool": None, "arguments": echo(raw), "result": result})
        return result

    def _call(self, name: Any, arguments: Any) -> dict[str, Any]:
        """Validate everything first (an invalid call is always ``error``, never an injected
        ``failed``), then the budgets, then the failure draw, then the tool itself."""
        if self.steps > self.settings.max_steps and not self.finished:
            self.invalid += 1
            self.finished = self.truncated = True
            return _result(
                "error",
                f"the step limit of {self.settings.max_steps} tool calls is reached; the episode is over",
            )
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self.invalid += 1
            return _result("error", f"unknown tool {echo(name)}; tools: {sorted(self.tools)}")
        self.calls[tool.name] += 1
        if self.finished:
            self.invalid += 1
            why = "the step limit was reached" if self.truncated else "done was called"
            return _result("error", f"the episode is over ({why})")
        try:
            args = self._validate(tool.name, tool.parse(arguments))
        except ArgumentError as error:
            self.invalid += 1
            return _result("error", clip(str(error), MESSAGE_LIMIT))
        exhausted = self._exhausted(tool.name, args)
        if exhausted:
            return _result("budget_exhausted", exhausted)
        if (
            tool.name != "done"
            and self.settings.failure_rate
            and self.rng.random() < self.settings.failure_rate
        ):
            self.failures += 1
            return _result("failed", "the tool failed this time; nothing changed, try again")
        result: dict[str, Any] = self.handlers[tool.name](**args)
        return result

    def _validate(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Every check of an argument against the task; raises :class:`ArgumentError`."""
        if "row" in args:
            row, col = args["row"], args["col"]
            if not (0 <= row < self.task.rows and 0 <= col < self.task.cols):
                raise ArgumentError(
                    f"cell ({row}, {col}) is outside the {self.task.rows}x"
                    f"{self.task.cols} grid (rows 0..{self.task.rows - 1}, "
                    f"cols 0..{self.task.cols - 1})"
                )
            if name != "get_slot_id" and (row, col) not in self.slots:
                raise ArgumentError(
                    f"cell ({row}, {col}) is fixed, not hidden; hidden cells: {sorted(self.slots)}"
                )
        d = self.task.domain
        if (
            name == "set_slot"
            and args["id"] is not None
            and args["id"] not in self.slots[(args["row"], args["col"])].candidates
        ):
            raise ArgumentError(
                f"{echo(args['id'])} is not a candidate of cell "
                f"({args['row']}, {args['col']}); find candidates with "
                f"query_{d}_candidate_from_attribute"
            )
        if name == self.names.slot_check and self.grid[args["row"]][args["col"]] is None:
            raise ArgumentError(f"cell ({args['row']}, {args['col']}) is empty; set_slot first")
        if "field" in args:
            self._known_field(args["field"])
        if name == self.names.query:
            args = {**args, "value": self._query_value(args["field"], args["operator"], args["value"])}
        if name == self.names.item_info and args["id"] not in self.visible:
            raise ArgumentError(
                f"{echo(args['id'])} is not an item fixed in the grid; "
                f"candidates are read with query_{d}_candidate_from_attribute"
            )
        if name == self.names.item_attributes:
            unknown = [i for i in args["ids"] if i not in self.visible]
            if unknown:
                raise ArgumentError(f"not items fixed in the grid: {echo(unknown)}")
        return args

    def _known_field(self, field: str) -> None:
        if field not in self.attributes:
            raise ArgumentError(f"unknown field {echo(field)}; fields: {sorted(self.attributes)}")

    def _exhausted(self, name: str, args: dict[str, Any]) -> str:
        """Why the call cannot run for lack of budget ("" when it can)."""
        if name == self.names.query and self.queries_left[(args["row"], args["col"])] == 0:
            return f"no queries left for cell ({args['row']}, {args['col']})"
        if name == self.names.global_check and self.checks_left == 0:
            return "no global checks left"
        return ""

    # Common tools -----------------------------------------------------------------------

    def _set_slot(self, row: int, col: int, id: str | None) -> dict[str, Any]:  # noqa: A002
        self.grid[row][col] = id
        return _result(
            "ok",
            f"cell ({row}, {col}) {'cleared' if id is None else 'set to ' + id}",
            {"row": row, "col": col, "id": id},
        )

    def _get_current_grid_state(self) -> dict[str, Any]:
        empty = [list(c) for c in sorted(self.slots) if self.grid[c[0]][c[1]] is None]
        return _result(
            "ok",
            f"{_cells(len(empty))} still empty",
            {"grid": [list(row) for row in self.grid], "empty_cells": empty},
        )

    def _get_slot_id(self, row: int, col: int) -> dict[str, Any]:
        return _result("ok", "", {"row": row, "col": col, "id": self.grid[row][col]})

    def _get_hidden_slot_query_budget(self, row: int, col: int) -> dict[str, Any]:
        left = self.queries_left[(row, col)]
        return _result(
            "ok", "", {"remaining": None if left == UNLIMITED else left, "unlimited": left == UNLIMITED}
        )

    def _get_global_check_budget(self) -> dict[str, Any]:
        left = self.checks_left
        return _result(
            "ok", "", {"remaining": None if left == UNLIMITED else left, "unlimited": left == UNLIMITED}
        )

    def _done(self) -> dict[str, Any]:
        self.finished = True
        empty = sum(self.grid[r][c] is None for r, c in self.slots)
        return _result("ok", f"episode finished with {_cells(empty, 'empty hidden')}", {"empty": empty})

    # Domain tools -----------------------------------------------------------------------

    def _query_d_candidate_from_attribute(
        self, row: int, col: int, field: str, operator: str, value: Any
    ) -> dict[str, Any]:
        left = self.queries_left[(row, col)]
        if left != UNLIMITED:
            self.queries_left[(row, col)] = left - 1
        self.queries_used += 1
        matches = [
            {"id": i, field: self.task.items[i][field]}
            for i in self.slots[(row, col)].candidates
            if _matches(self.task.items[i][field], operator, value)
        ]
        return _result("ok", _matching(len(matches)), {"candidates": matches})

    def _query_value(self, field: str, operator: str, value: Any) -> Any:
        """The query value, coerced; raises :class:`ArgumentError` naming what is allowed."""
        kind = self.attributes[field]
        allowed = NUMERIC_OPS if kind == "number" else CATEGORY_OPS
        if operator not in allowed:
            raise ArgumentError(
                f"operator {echo(operator)} is not allowed on {kind} field "
                f"{field!r}; allowed: {[str(op) for op in allowed]}"
            )
        if kind == "number":
            number = int_text(value)
            value = value if number is None else number
            if not isinstance(value, int) or isinstance(value, bool):
                raise ArgumentError(f"value must be an integer for a number field, got {echo(value)}")
            return bounded_int("value", value)
        if operator in ("in", "not_in"):
            value = [value] if isinstance(value, str) else value
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ArgumentError(f"operator {operator!r} needs a list of categories, got {echo(value)}")
            return value
        if not isinstance(value, str):
            raise ArgumentError(f"value must be a category string, got {echo(value)}")
        return value

    def _get_d_item_info(self, id: str) -> dict[str, Any]:  # noqa: A002
        return _result("ok", "", dict(self.task.items[id]))

    def _get_d_item_attributes(self, ids: list[str], field: str) -> dict[str, Any]:
        return _result("ok", "", {i: self.task.items[i][field] for i in ids})

    def _check_d_slot_constraints(self, row: int, col: int) -> dict[str, Any]:
        item = self.task.items[str(self.grid[row][col])]
        results = [
            {**rule.to_dict(), "satisfied": slot_rule_holds(rule, item)}
            for rule in self.slots[(row, col)].constraints
        ]
        ok = all(r["satisfied"] for r in results)
        return _result(
            "ok",
            "all slot constraints hold" if ok else "a slot constraint fails",
            {"satisfied": ok, "constraints": results},
        )

    def _check_d_global_constraints(self) -> dict[str, Any]:
        if self.checks_left != UNLIMITED:
            self.checks_left -= 1
        self.checks_used += 1
        statuses = check_global(self.task, self.grid)
        violated = sorted(name for name, s in statuses.items() if s == "violated")
        complete = all(self.grid[r][c] is not None for r, c in self.slots)
        regions = {
            rule.name: [list(cell) for cell in rule.cells or ()]
            for rule in self.task.global_constraints
            if rule.name in violated and rule.scope == "cells"
        }
        return _result(
            "ok",
            f"{len(violated)} violated: {', '.join(violated)}" if violated else "no rule violated",
            {
                "rules": statuses,
                "violated": violated,
                "violated_cells": regions,
                "complete": complete,
                "all_satisfied": complete and not violated,
            },
        )


def _matches(actual: Any, operator: str, value: Any) -> bool:
    if operator == "in":
        return actual in value
    if operator == "not_in":
        return actual not in value
    if operator == "=":
        return bool(actual == value)
    if isinstance(actual, str):
        return False
    return bool(
        {">": actual > value, ">=": actual >= value, "<": actual < value, "<=": actual <= value}[operator]
    )
