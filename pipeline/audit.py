"""Integrity audit: do surface shortcuts pick the truth more often than chance?

On every hidden cell with decoys, each policy picks one of the candidates that pass the
cell's slot rules (the truth and its decoys); chance is 1 / (1 + decoys). A policy that
beats chance by a wide margin over many cells is a shortcut the generator must remove.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import median
from typing import Any

from solvers.checker import locally_valid_candidates
from solvers.task import Answer, Slot, Task

Policy = Callable[[Task, Slot, list[str]], str]


def _summed(task: Task) -> list[tuple[str, int]]:
    """(attribute, +1 to prefer large / -1 to prefer small) for every summed attribute."""
    out = []
    for rule in task.global_constraints:
        if rule.kind in ("sum_max", "sum_min"):
            out.append((rule.attribute, -1 if rule.kind == "sum_max" else +1))
    return sorted(set(out))


def _typical(task: Task, slot: Slot, options: list[str]) -> str:
    numeric = [a for a, v in task.items[options[0]].items()
               if isinstance(v, int) and a not in ("id", "name")]  # fmt: skip
    centre = {a: median(int(task.items[i][a]) for i in options) for a in numeric}
    spread = {a: (max(int(task.items[i][a]) for i in options)
                  - min(int(task.items[i][a]) for i in options)) or 1 for a in numeric}  # fmt: skip
    return min(options, key=lambda i: (sum(abs(int(task.items[i][a]) - centre[a]) / spread[a]
                                           for a in numeric), i))  # fmt: skip


def _margin(task: Task, slot: Slot, options: list[str]) -> str:
    def margin(item_id: str) -> int:
        item = task.items[item_id]
        total = 0
        for rule in slot.constraints:
            if rule.op in ("<=", ">="):
                diff = int(rule.value) - int(item[rule.attribute])  # type: ignore[arg-type]
                total += diff if rule.op == "<=" else -diff
        return total

    return max(options, key=lambda i: (margin(i), i))


def _extreme(attribute: str, sign: int) -> Policy:
    def pick(task: Task, slot: Slot, options: list[str]) -> str:
        return max(options, key=lambda i: (sign * int(task.items[i][attribute]), i))

    return pick


def policies(task: Task) -> dict[str, Policy]:
    def smallest_name(t: Task, s: Slot, o: list[str]) -> str:
        return min(o, key=lambda i: (str(t.items[i]["name"]), i))

    table: dict[str, Policy] = {
        "first_listed": lambda t, s, o: o[0],
        "smallest_id": lambda t, s, o: min(o),
        "smallest_name": smallest_name,
        "most_typical": _typical,
        "largest_slot_margin": _margin,
    }
    for attribute in sorted({attribute for attribute, _ in _summed(task)}):
        for word, sign in (("largest", 1), ("smallest", -1)):
            table[f"{word}_{attribute}"] = _extreme(attribute, sign)
    return table


def audit_task(task: Task, answer: Answer) -> dict[str, Any]:
    """Per policy: truth picks on decoy cells; plus the chance expectation."""
    truth = {(r.row, r.col): r.truth for r in answer.roles}
    hits: dict[str, int] = {}
    cells, chance = 0, 0.0
    table = policies(task)
    for slot in task.slots:
        options = locally_valid_candidates(task, slot)
        if len(options) < 2:
            continue
        cells += 1
        chance += 1 / len(options)
        for name, policy in table.items():
            hits[name] = hits.get(name, 0) + int(policy(task, slot, options) == truth[(slot.row, slot.col)])
    return {"decoy_cells": cells, "chance": chance, "hits": hits}
