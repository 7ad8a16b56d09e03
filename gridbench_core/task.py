"""The task data model: the agent-facing task and the answer, as frozen records.

Pure data; no solver imports. ``to_dict`` / ``from_dict`` give the JSON file layout of
docs/format.md. Task format 1 is the paper's; format 2 adds rules scoped to a list of cells
(``scope: "cells"`` with ``cells``). A task file is written in the lowest format that can hold
it, so a task without such rules is a format-1 file, byte for byte as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.records import Certificate, CrossCheck, Measures
from gridbench_core.vocabulary import UPPER_BOUND_KINDS, RuleKind, Scope, SlotOp

SCHEMA_VERSION = "1"  # the answer file's format, and a task's without cell-scoped rules
TASK_SCHEMA_VERSIONS = ("1", "2")  # every task format this code reads and writes
Value = int | str
Grid = tuple[tuple[str | None, ...], ...]

SLOT_OPS = tuple(SlotOp)
RULE_KINDS = tuple(RuleKind)
SCOPES = tuple(Scope)


class TaskFormatError(UserError):
    """A task or answer record is malformed; the message names the field."""


RULE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # what every rule is called by, in prompt and tools
RULE_NAME_TEXT = "a plain identifier (lowercase letters, digits and _, starting with a letter, at most 64)"
INT_LIMIT = 2**40  # every integer of a task; far beyond any real value, safe for the solvers


def checked_int(value: Any, what: str) -> int:
    """``value`` as an integer within +-INT_LIMIT, else a :class:`TaskFormatError` naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TaskFormatError(f"{what} must be an integer, got {str(value)[:40]!r}")
    if abs(value) > INT_LIMIT:
        raise TaskFormatError(f"{what}={str(value)[:40]} is out of range (|value| <= 2**40)")
    return value


@dataclass(frozen=True)
class SlotRule:
    """``attribute op value`` on one cell; ``value`` is a tuple for ``in`` / ``not_in``."""

    attribute: str
    op: str
    value: int | tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The rule as a JSON-ready dict (a list of values for ``in`` / ``not_in``)."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"attribute": self.attribute, "op": self.op, "value": value}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SlotRule:
        """The rule a task file's dict describes; :class:`TaskFormatError` when it is malformed."""
        op = data.get("op")
        if op not in SLOT_OPS:
            raise TaskFormatError(f"slot constraint op {op!r} is unknown; allowed: {SLOT_OPS}")
        value = data.get("value")
        if op in ("in", "not_in"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TaskFormatError(f"slot constraint {op!r} needs a list of strings")
            return SlotRule(str(data["attribute"]), op, tuple(value))
        return SlotRule(str(data["attribute"]), op, checked_int(value, f"slot constraint {op!r} value"))


@dataclass(frozen=True)
class GlobalRule:
    """A rule over the grid, each row / column (``scope`` row / col), or the listed ``cells``
    together (``scope`` cells: a region, format 2)."""

    name: str
    kind: str
    attribute: str
    bound: int
    scope: str = "grid"
    equals: str | None = None
    at_least: int | None = None
    cells: tuple[tuple[int, int], ...] | None = None  # scope cells only: sorted, distinct

    @property
    def is_upper_bound(self) -> bool:
        """Whether the rule caps a quantity (``sum_max``, ``repeat_max`` or ``count_max``)."""
        return self.kind in UPPER_BOUND_KINDS

    def with_bound(self, bound: int) -> GlobalRule:
        """A copy of the rule with bound ``bound``."""
        return GlobalRule(
            self.name, self.kind, self.attribute, bound, self.scope, self.equals, self.at_least, self.cells
        )

    def to_dict(self) -> dict[str, Any]:
        """The rule as a JSON-ready dict; ``equals`` and ``at_least`` only when set."""
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "attribute": self.attribute,
            "scope": self.scope,
            "bound": self.bound,
        }
        if self.equals is not None:
            data["equals"] = self.equals
        if self.at_least is not None:
            data["at_least"] = self.at_least
        if self.cells is not None:
            data["cells"] = [list(cell) for cell in self.cells]
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> GlobalRule:
        """The rule a task file's dict describes; :class:`TaskFormatError` when it is malformed."""
        kind = data.get("kind")
        if kind not in RULE_KINDS:
            raise TaskFormatError(f"global rule kind {kind!r} is unknown; known: {RULE_KINDS}")
        scope = data.get("scope", "grid")
        if scope not in SCOPES:
            raise TaskFormatError(f"global rule scope {scope!r} is unknown; known: {SCOPES}")
        if kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX) and data.get("equals") is None:
            raise TaskFormatError(f"global rule {data.get('name')!r} ({kind}) needs 'equals'")
        if kind == RuleKind.COUNT_MIN_THRESHOLD and data.get("at_least") is None:
            raise TaskFormatError(f"global rule {data.get('name')!r} ({kind}) needs 'at_least'")
        name = str(data["name"])[:40]
        if not isinstance(data["name"], str) or not RULE_NAME.fullmatch(data["name"]):
            raise TaskFormatError(f"global rule name {name!r} is not {RULE_NAME_TEXT}")
        at_least = data.get("at_least")
        if at_least is not None:
            at_least = checked_int(at_least, f"rule {name} at_least")
        return GlobalRule(
            str(data["name"]),
            kind,
            str(data["attribute"]),
            checked_int(data.get("bound"), f"rule {name} bound"),
            scope,
            data.get("equals"),
            at_least,
            _rule_cells(data, scope, name),
        )


def _rule_cells(data: dict[str, Any], scope: str, name: str) -> tuple[tuple[int, int], ...] | None:
    """The ``cells`` of a cell-scoped rule: a non-empty, sorted list of distinct [row, col]
    pairs (bounds are checked against the grid by the task reader); None for other scopes."""
    cells = data.get("cells")
    if scope != Scope.CELLS:
        if cells is not None:
            raise TaskFormatError(f"global rule {name!r}: 'cells' is only allowed with scope 'cells'")
        return None
    if not isinstance(cells, list) or not cells or len(cells) > 10_000:
        raise TaskFormatError(f"global rule {name!r} (scope cells) needs a non-empty list 'cells'")
    out = []
    for cell in cells:
        if not isinstance(cell, list) or len(cell) != 2:
            raise TaskFormatError(f"global rule {name!r}: each of 'cells' must be [row, col]")
        out.append(
            (checked_int(cell[0], f"rule {name} cell row"), checked_int(cell[1], f"rule {name} cell col"))
        )
    if out != sorted(set(out)):
        raise TaskFormatError(f"global rule {name!r}: 'cells' must be sorted and distinct")
    return tuple(out)


@dataclass(frozen=True)
class Slot:
    """A hidden cell: its shuffled candidate ids and its slot constraints."""

    row: int
    col: int
    candidates: tuple[str, ...]
    constraints: tuple[SlotRule, ...]

    def to_dict(self) -> dict[str, Any]:
        """The hidden cell as a JSON-ready dict."""
        return {
            "row": self.row,
            "col": self.col,
            "candidates": list(self.candidates),
            "constraints": [rule.to_dict() for rule in self.constraints],
        }


@dataclass(frozen=True)
class Task:
    """The agent-facing task. ``items`` maps id -> record with ``id``, ``name``, attributes."""

    task_id: str
    domain: str
    rows: int
    cols: int
    decoy_budget: int
    grid: Grid
    items: dict[str, dict[str, Value]]
    slots: tuple[Slot, ...]
    global_constraints: tuple[GlobalRule, ...]
    instruction: str = ""
    candidates_per_slot: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    format: str = ""  # the task format a file declared ("" when made here: the lowest that fits)

    @property
    def hidden_slots(self) -> int:
        """The number of hidden cells (H)."""
        return len(self.slots)

    @property
    def needs_format(self) -> str:
        """The lowest task format that holds this task: "2" with a cell-scoped rule, else "1"."""
        return "2" if any(rule.scope == Scope.CELLS for rule in self.global_constraints) else "1"

    @property
    def schema_version(self) -> str:
        """The format the task file declares: as read, or the lowest that holds it."""
        return self.format or self.needs_format

    def to_dict(self) -> dict[str, Any]:
        """The task file's content as a JSON-ready dict."""
        return {
            "schema_version": self.schema_version,
            "task_id": self.task_id,
            "domain": self.domain,
            "rows": self.rows,
            "cols": self.cols,
            "hidden_slots": self.hidden_slots,
            "decoy_budget": self.decoy_budget,
            "candidates_per_slot": self.candidates_per_slot,
            "grid": [list(row) for row in self.grid],
            "items": [self.items[item_id] for item_id in sorted(self.items)],
            "slots": [slot.to_dict() for slot in self.slots],
            "global_constraints": [rule.to_dict() for rule in self.global_constraints],
            "instruction": self.instruction,
            **self.extra,
        }


@dataclass(frozen=True)
class SlotRoles:
    """Which candidate of a hidden cell is the truth, a decoy, or filtered."""

    row: int
    col: int
    truth: str
    decoys: tuple[str, ...]
    filtered: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The cell's roles as a JSON-ready dict."""
        return {
            "row": self.row,
            "col": self.col,
            "truth": self.truth,
            "decoys": list(self.decoys),
            "filtered": list(self.filtered),
        }


@dataclass(frozen=True)
class Answer:
    """The answer file: truth grid, candidate roles, certificates and difficulty measures."""

    task_id: str
    truth: tuple[tuple[str, ...], ...]
    roles: tuple[SlotRoles, ...]
    certificate: Certificate | None = None
    crosscheck: CrossCheck | None = None  # None when the MILP cross-check was not run
    measures: Measures | None = None

    def truth_choice(self) -> dict[tuple[int, int], str]:
        """The truth item id of each hidden cell."""
        return {(role.row, role.col): role.truth for role in self.roles}

    def to_dict(self) -> dict[str, Any]:
        """The answer file's content as a JSON-ready dict."""
        return {
            "schema_version": SCHEMA_VERSION,
            "task_id": self.task_id,
            "truth": [list(row) for row in self.truth],
            "roles": [role.to_dict() for role in self.roles],
            "certificate": self.certificate.to_dict() if self.certificate else {},
            "crosscheck": self.crosscheck.to_dict() if self.crosscheck else {},
            "measures": self.measures.to_dict() if self.measures else {},
        }
