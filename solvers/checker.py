"""The reference checker: the one definition of what every constraint means.

Pure Python, integer arithmetic only, no solver. The CP-SAT and CBC models are tested
against it by brute force on small grids.

Partial grids (docs/spec.md, section 1 "The task", "Partial grids"): upper-bound rules
(``sum_max``, ``repeat_max``, ``count_max``) are judged on the filled cells and are
``violated`` as soon as the filled cells break them, ``satisfied`` otherwise; lower-bound
rules (``sum_min``, ``count_min``, ``count_min_threshold``) are ``pending`` until the grid is
complete.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from gridbench_core.task import GlobalRule, Slot, SlotRule, Task
from gridbench_core.vocabulary import RuleKind

SATISFIED, VIOLATED, PENDING = "satisfied", "violated", "pending"
Cell = tuple[int, int]
Choice = Mapping[Cell, str]
Record = Mapping[str, Any]
Value = TypeVar("Value")


class _Memo(threading.local):
    """The results remembered inside the innermost open :func:`task_memo` of this thread."""

    table: dict[Hashable, tuple[tuple[object, ...], Any]] | None = None


_MEMO = _Memo()


@contextlib.contextmanager
def task_memo() -> Iterator[None]:
    """Inside the block, what is derived from a task alone (its locally valid candidates,
    its linear rows, its propagation, its ladder) is computed once per task and remembered
    (:func:`remembered`); the tasks read inside must not change there. Nested blocks share
    the outer one's memory; it is dropped when the outermost block ends. Outside any block
    nothing is remembered, so every result is computed afresh, as without it."""
    if _MEMO.table is not None:
        yield
        return
    _MEMO.table = {}
    try:
        yield
    finally:
        _MEMO.table = None


def remembered(kind: str, owners: tuple[object, ...], key: Hashable, compute: Callable[[], Value]) -> Value:
    """``compute()``, or inside :func:`task_memo` the value remembered for ``kind``, the very
    objects ``owners`` (compared by identity, kept alive by the memory) and ``key``."""
    table = _MEMO.table
    if table is None:
        return compute()
    index = (kind, tuple(map(id, owners)), key)
    hit = table.get(index)
    if hit is not None and all(a is b for a, b in zip(hit[0], owners, strict=True)):
        return hit[1]  # type: ignore[no-any-return]
    value = compute()
    table[index] = (owners, value)
    return value


def slot_rule_holds(rule: SlotRule, item: Record) -> bool:
    """True when ``item`` meets one slot rule."""
    value = item.get(rule.attribute)
    if value is None:
        return False
    if rule.op == "<=":
        return isinstance(value, int) and value <= rule.value  # type: ignore[operator]
    if rule.op == ">=":
        return isinstance(value, int) and value >= rule.value  # type: ignore[operator]
    if rule.op == "in":
        return value in rule.value  # type: ignore[operator]
    if rule.op == "not_in":
        return value not in rule.value  # type: ignore[operator]
    raise ValueError(f"unknown slot op {rule.op!r}")


def slot_violations(rules: Sequence[SlotRule], item: Record) -> list[SlotRule]:
    """The slot rules ``item`` breaks (empty when it passes the cell)."""
    return [rule for rule in rules if not slot_rule_holds(rule, item)]


def passes_slot(slot: Slot, item: Record) -> bool:
    """Whether ``item`` meets every slot constraint of ``slot``."""
    return all(slot_rule_holds(rule, item) for rule in slot.constraints)


def rule_groups(rule: GlobalRule, rows: int, cols: int) -> tuple[tuple[Cell, ...], ...]:
    """The cell groups a rule applies to separately: the grid, each row, each column, or the
    one group of cells a cell-scoped rule lists."""
    if rule.scope == "cells":
        return (tuple(rule.cells or ()),)
    return _groups(str(rule.scope), rows, cols)


@functools.lru_cache(maxsize=1024)
def _groups(scope: str, rows: int, cols: int) -> tuple[tuple[Cell, ...], ...]:
    if scope == "row":
        return tuple(tuple((r, c) for c in range(cols)) for r in range(rows))
    if scope == "col":
        return tuple(tuple((r, c) for r in range(rows)) for c in range(cols))
    return (tuple((r, c) for r in range(rows) for c in range(cols)),)


def rule_measure(rule: GlobalRule, records: Sequence[Record]) -> int:
    """The integer a rule bounds, over the given item records.

    sum_*: the sum of the attribute; repeat_max: the largest number of items sharing one
    value; count_min / count_max: items whose attribute equals ``equals``;
    count_min_threshold: items whose attribute is >= ``at_least``.
    """
    attribute = rule.attribute
    if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN):
        return sum(int(record[attribute]) for record in records)
    if rule.kind == RuleKind.REPEAT_MAX:
        counts = Counter(record[attribute] for record in records)
        return max(counts.values(), default=0)
    if rule.kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX):
        return sum(1 for record in records if record[attribute] == rule.equals)
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        return sum(1 for record in records if int(record[attribute]) >= int(rule.at_least or 0))
    raise ValueError(f"unknown rule kind {rule.kind!r}")


def rule_excess(rule: GlobalRule, measure: int) -> int:
    """By how many units a measure breaks the bound (0 or less when it holds)."""
    return measure - rule.bound if rule.is_upper_bound else rule.bound - measure


def group_records(
    grid: Sequence[Sequence[str | None]], items: Mapping[str, Record], group: Sequence[Cell]
) -> tuple[list[Record], bool]:
    """The filled records of a group and whether the group is complete."""
    records = [items[grid[r][c]] for r, c in group if grid[r][c] is not None]  # type: ignore[index]
    return records, len(records) == len(group)


def rule_status(
    rule: GlobalRule,
    grid: Sequence[Sequence[str | None]],
    items: Mapping[str, Record],
    complete: bool | None = None,
) -> str:
    """``satisfied``, ``violated`` or ``pending`` for one rule on a full or partial grid
    (``complete``: whether every cell is filled, when the caller knows)."""
    if complete is None:
        complete = all(cell is not None for row in grid for cell in row)
    if not rule.is_upper_bound and not complete:
        return PENDING
    for group in rule_groups(rule, len(grid), len(grid[0])):
        records, _ = group_records(grid, items, group)
        if rule_excess(rule, rule_measure(rule, records)) > 0:
            return VIOLATED
    return SATISFIED


def check_global(task: Task, grid: Sequence[Sequence[str | None]]) -> dict[str, str]:
    """Status of every global rule of ``task`` on ``grid``, by rule name."""
    complete = all(cell is not None for row in grid for cell in row)
    return {rule.name: rule_status(rule, grid, task.items, complete) for rule in task.global_constraints}


def fill(task: Task, choice: Choice) -> list[list[str | None]]:
    """The task grid with the chosen ids written into hidden cells."""
    grid = [list(row) for row in task.grid]
    for (row, col), item_id in choice.items():
        grid[row][col] = item_id
    return grid


def is_valid_completion(task: Task, choice: Choice) -> bool:
    """True when ``choice`` fills every hidden cell with one of its candidates that passes
    the cell's slot rules and the filled grid satisfies every global rule."""
    for slot in task.slots:
        item_id = choice.get((slot.row, slot.col))
        if item_id is None or item_id not in slot.candidates:
            return False
        if not passes_slot(slot, task.items[item_id]):
            return False
    grid = fill(task, choice)
    return all(status == SATISFIED for status in check_global(task, grid).values())


def locally_valid_candidates(task: Task, slot: Slot) -> list[str]:
    """Candidates of a hidden cell that pass its slot rules, in listed order (inside
    :func:`task_memo`, judged once per slot and item table)."""
    items = task.items
    valid = remembered("valid", (items, slot), None, lambda: _passing(slot, items))
    return list(valid)


def _passing(slot: Slot, items: Mapping[str, Record]) -> tuple[str, ...]:
    """The candidates of ``slot`` that :func:`passes_slot`, in listed order: the same judgement,
    with the rules read once for the cell rather than once per candidate (generation and the
    audit judge every candidate of every cell, filtered ones included)."""
    rules = [(rule.attribute, rule.op, rule.value) for rule in slot.constraints]
    if not all(op in ("<=", ">=", "in", "not_in") for _, op, _ in rules):
        return tuple(c for c in slot.candidates if passes_slot(slot, items[c]))  # its refusal
    kept = []
    for candidate in slot.candidates:
        item = items[candidate]
        for attribute, op, bound in rules:
            value = item.get(attribute)
            if value is None:
                break
            if op == "<=":
                if not (isinstance(value, int) and value <= bound):  # type: ignore[operator]
                    break
            elif op == ">=":
                if not (isinstance(value, int) and value >= bound):  # type: ignore[operator]
                    break
            elif op == "in":
                if value not in bound:  # type: ignore[operator]
                    break
            elif value in bound:  # type: ignore[operator]  # not_in
                break
        else:
            kept.append(candidate)
    return tuple(kept)


def enumerate_completions(task: Task, limit: int | None = None) -> Iterator[dict[Cell, str]]:
    """Brute force: every valid completion (for tests on small grids only)."""
    cells = [(slot.row, slot.col) for slot in task.slots]
    options = [locally_valid_candidates(task, slot) for slot in task.slots]
    found = 0
    for combo in itertools.product(*options):
        choice = dict(zip(cells, combo, strict=True))
        if is_valid_completion(task, choice):
            yield choice
            found += 1
            if limit is not None and found >= limit:
                return
