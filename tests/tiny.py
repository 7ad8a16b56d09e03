"""A tiny hand-built toy task whose every value is known, for tests that need exact numbers.

Grid 2x3, hidden cells (0, 1) and (1, 2). ``OPEN_TASK`` has three completions; ``TASK`` (a
tighter weight floor, the rendered instruction) has one, (0, 1) = C and (1, 2) = G, and
``ANSWER`` is its answer: A and D are the decoys of (0, 1) (B breaks cost <= 4), F and E those
of (1, 2) (E is blue, and a fixed cell already is).
"""

from __future__ import annotations

import dataclasses

from domains import get_domain
from gridbench_core.task import Answer, GlobalRule, Slot, SlotRoles, SlotRule, Task
from pipeline.generation.instruction import write_instruction


def _item(item_id: str, cost: int, weight: int, color: str, shape: str = "ring") -> dict:
    return {
        "id": item_id,
        "name": f"Bead {item_id}",
        "cost": cost,
        "weight": weight,
        "color": color,
        "shape": shape,
    }


ITEMS = {
    i["id"]: i
    for i in (
        _item("V00", 2, 3, "red"),
        _item("V02", 1, 1, "blue"),
        _item("V10", 4, 2, "green"),
        _item("V11", 3, 5, "red", "star"),
        _item("A", 3, 4, "red"),  # (0, 1): cost 3 is the boundary of the queries below
        _item("B", 5, 1, "blue", "star"),
        _item("C", 3, 9, "green", "circle"),
        _item("D", 1, 2, "red", "square"),
        _item("E", 7, 6, "blue"),  # (1, 2)
        _item("F", 2, 2, "green", "star"),
        _item("G", 0, 8, "red", "circle"),
    )
}
OPEN_TASK = Task(
    "toy-accounting",
    "toy",
    2,
    3,
    2,
    (("V00", None, "V02"), ("V10", "V11", None)),
    ITEMS,
    (
        Slot(0, 1, ("A", "B", "C", "D"), (SlotRule("cost", "<=", 4),)),
        Slot(1, 2, ("E", "F", "G"), (SlotRule("weight", ">=", 2), SlotRule("cost", "<=", 9))),
    ),
    (
        GlobalRule("total_cost_max", "sum_max", "cost", 14),
        GlobalRule("total_weight_min", "sum_min", "weight", 20),
        GlobalRule("blue_max", "count_max", "color", 1, equals="blue"),
    ),
)
RULES = (
    GlobalRule("total_cost_max", "sum_max", "cost", 14),
    GlobalRule("total_weight_min", "sum_min", "weight", 27),
    GlobalRule("blue_max", "count_max", "color", 1, equals="blue"),
)
TASK = dataclasses.replace(
    OPEN_TASK,
    task_id="toy-tiny",
    decoy_budget=4,
    global_constraints=RULES,
    instruction=write_instruction(
        get_domain("toy"), 2, 3, list(RULES), {(s.row, s.col): list(s.constraints) for s in OPEN_TASK.slots}
    ),
)
TRUTH = [["V00", "C", "V02"], ["V10", "V11", "G"]]
ANSWER = Answer(
    TASK.task_id,
    tuple(tuple(row) for row in TRUTH),
    (SlotRoles(0, 1, "C", ("A", "D"), ("B",)), SlotRoles(1, 2, "G", ("E", "F"), ())),
)
