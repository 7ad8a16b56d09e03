"""Reading task and answer records from JSON-shaped dicts, with errors that name the field."""

from __future__ import annotations

from typing import Any

from gridbench_core.records import Certificate, CrossCheck, Measures, Record, record_from
from gridbench_core.task import (
    INT_LIMIT,
    SCHEMA_VERSION,
    TASK_SCHEMA_VERSIONS,
    Answer,
    GlobalRule,
    Slot,
    SlotRoles,
    SlotRule,
    Task,
    TaskFormatError,
    checked_int,
)

_TASK_FIELDS = {
    "schema_version",
    "task_id",
    "domain",
    "rows",
    "cols",
    "hidden_slots",
    "decoy_budget",
    "candidates_per_slot",
    "grid",
    "items",
    "slots",
    "global_constraints",
    "instruction",
}


def _require(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise TaskFormatError(f"{where}: missing field {key!r}")
    return data[key]


def _check_version(data: dict[str, Any], where: str, known: tuple[str, ...] = (SCHEMA_VERSION,)) -> None:
    version = _require(data, "schema_version", where)
    if version not in known:
        raise TaskFormatError(
            f"{where}: schema_version {str(version)[:20]!r} is not known; this code reads {list(known)}"
        )


def task_from_dict(data: dict[str, Any]) -> Task:
    """Build a :class:`Task` from its JSON record, checking shape and references."""
    where = f"task {data.get('task_id', '?')}"
    _check_version(data, where, TASK_SCHEMA_VERSIONS)
    rows = checked_int(_require(data, "rows", where), f"{where} rows")
    cols = checked_int(_require(data, "cols", where), f"{where} cols")
    grid = tuple(tuple(cell for cell in row) for row in _require(data, "grid", where))
    if len(grid) != rows or any(len(row) != cols for row in grid):
        raise TaskFormatError(f"{where}: grid is not {rows} x {cols}")
    items: dict[str, dict[str, Any]] = {}
    for record in _require(data, "items", where):
        item_id = str(_require(record, "id", f"{where} item"))
        for key, value in record.items():
            if not isinstance(value, str) and (
                type(value) is not int or not -INT_LIMIT <= value <= INT_LIMIT  # bool is not int here
            ):  # the message is made only for a bad value (items are most of a task file)
                checked_int(value, f"{where} item {item_id[:40]} {str(key)[:40]}")
        items[item_id] = dict(record)
    slots = tuple(
        Slot(
            checked_int(s["row"], f"{where} slot row"),
            checked_int(s["col"], f"{where} slot col"),
            _ids(s["candidates"], f"{where} slot candidates"),
            tuple(SlotRule.from_dict(c) for c in s.get("constraints", [])),
        )
        for s in _require(data, "slots", where)
    )
    rules = tuple(GlobalRule.from_dict(r) for r in _require(data, "global_constraints", where))
    task = Task(
        task_id=str(_require(data, "task_id", where)),
        domain=str(_require(data, "domain", where)),
        rows=rows,
        cols=cols,
        decoy_budget=checked_int(data.get("decoy_budget", 0), f"{where} decoy_budget"),
        grid=grid,
        items=items,
        slots=slots,
        global_constraints=rules,
        instruction=str(data.get("instruction", "")),
        candidates_per_slot=checked_int(data.get("candidates_per_slot", 0), f"{where} candidates_per_slot"),
        extra={k: v for k, v in data.items() if k not in _TASK_FIELDS},
        format=str(data["schema_version"]),
    )
    _check_references(task, where)
    if task.format < task.needs_format:
        raise TaskFormatError(
            f"{where}: schema_version {task.format!r} cannot hold rules with scope 'cells'; "
            f"declare {task.needs_format!r}"
        )
    if task.format > task.needs_format:
        raise TaskFormatError(
            f"{where}: schema_version {task.format!r} but no rule has scope 'cells'; a task is "
            f"written in the lowest format that holds it: declare {task.needs_format!r}"
        )
    if "hidden_slots" in data and checked_int(data["hidden_slots"], f"{where} hidden_slots") != len(slots):
        raise TaskFormatError(f"{where}: hidden_slots={data['hidden_slots']} but {len(slots)} slots")
    return task


def _check_references(task: Task, where: str) -> None:
    for row in task.grid:
        for cell in row:
            if cell is not None and cell not in task.items:
                raise TaskFormatError(f"{where}: grid uses unknown item id {cell!r}")
    for slot in task.slots:
        if not (0 <= slot.row < task.rows and 0 <= slot.col < task.cols):
            raise TaskFormatError(f"{where}: slot ({slot.row},{slot.col}) is outside the grid")
        if task.grid[slot.row][slot.col] is not None:
            raise TaskFormatError(f"{where}: slot ({slot.row},{slot.col}) is not empty in grid")
        for candidate in slot.candidates:
            if candidate not in task.items:
                raise TaskFormatError(f"{where}: slot candidate {candidate!r} is not in items")
    for rule in task.global_constraints:
        for r, c in rule.cells or ():
            if not (0 <= r < task.rows and 0 <= c < task.cols):
                raise TaskFormatError(
                    f"{where}: rule {rule.name[:40]!r} names cell ({r},{c}) outside the grid"
                )
            if task.grid[r][c] is not None:
                raise TaskFormatError(
                    f"{where}: rule {rule.name[:40]!r} names cell ({r},{c}), which is visible; "
                    "a region names hidden cells only"
                )
    hidden = sum(cell is None for row in task.grid for cell in row)
    if hidden != len(task.slots):
        raise TaskFormatError(f"{where}: grid has {hidden} empty cells but {len(task.slots)} slots")


def answer_from_dict(data: dict[str, Any]) -> Answer:
    """Build an :class:`Answer` from its JSON record."""
    where = f"answer {data.get('task_id', '?')}"
    _check_version(data, where)
    roles = tuple(
        SlotRoles(
            checked_int(r["row"], f"{where} role row"),
            checked_int(r["col"], f"{where} role col"),
            str(r["truth"]),
            _ids(r["decoys"], f"{where} role decoys"),
            _ids(r["filtered"], f"{where} role filtered"),
        )
        for r in _require(data, "roles", where)
    )
    return Answer(
        task_id=str(_require(data, "task_id", where)),
        truth=tuple(tuple(row) for row in _require(data, "truth", where)),
        roles=roles,
        certificate=_optional(Certificate, data.get("certificate"), f"{where} certificate"),
        crosscheck=_optional(CrossCheck, data.get("crosscheck"), f"{where} crosscheck"),
        measures=_optional(Measures, data.get("measures"), f"{where} measures"),
    )


def _ids(value: Any, what: str) -> tuple[str, ...]:
    """A list of item ids as a tuple; anything else (a string, a number, ids that are not
    strings) is a :class:`TaskFormatError` naming it."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TaskFormatError(f"{what} must be a list of item ids (strings), got {str(value)[:40]!r}")
    return tuple(value)


def _optional(cls: type[Record], data: Any, where: str) -> Record | None:
    """A record, or None for an absent or empty object (a proof that was not run)."""
    return record_from(cls, data, where) if data else None
