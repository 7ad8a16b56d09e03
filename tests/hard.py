"""A deliberately hard task, to make every solver stop on its limit for real (no mocks).

One row of hidden cells, each offering two items with large random ``cost`` and ``weight``;
the rules pin both grid sums to the truth's exactly (a two-constraint market split). Fixing
every cell to the truth is decided at once, but "is there another completion?" is a subset-sum
question that CP-SAT, HiGHS and CBC need minutes for at 30 cells, so a tiny limit stops them
before any proof: whatever they answer then must never count as one.
"""

from __future__ import annotations

import random

from domains import get_domain
from pipeline.generation.instruction import write_instruction
from solvers.records import Certificate
from solvers.results import FEASIBLE, INFEASIBLE
from solvers.task import Answer, GlobalRule, Slot, SlotRoles, Task

Cell = tuple[int, int]


def hard_task(cells: int = 30, seed: int = 0, decoy_cells: int | None = None) -> tuple[Task, Answer]:
    """The task file and its answer, valid for ``verify`` (toy domain, rendered instruction;
    the answer claims a certificate that holds). The other item of each of the first
    ``decoy_cells`` cells (default: all) is a decoy; elsewhere it is in no role."""
    decoy_cells = cells if decoy_cells is None else decoy_cells
    rng = random.Random(seed)
    items: dict[str, dict] = {}
    slots, truth, roles = [], [], []
    for col in range(cells):
        ids = []
        for k in range(2):
            item_id = f"T{seed}x{col:02d}{k}"
            items[item_id] = {
                "id": item_id,
                "name": f"Pebble {col}-{k}",
                "cost": rng.randint(10**5, 10**6),
                "weight": rng.randint(10**5, 10**6),
                "color": "red",
                "shape": "ring",
            }
            ids.append(item_id)
        pick = rng.randint(0, 1)
        slots.append(Slot(0, col, tuple(ids), ()))
        truth.append(ids[pick])
        roles.append(SlotRoles(0, col, ids[pick], (ids[1 - pick],) if col < decoy_cells else (), ()))
    rules = []
    for attribute in ("cost", "weight"):
        total = sum(items[i][attribute] for i in truth)
        rules.append(GlobalRule(f"total_{attribute}_max", "sum_max", attribute, total))
        rules.append(GlobalRule(f"total_{attribute}_min", "sum_min", attribute, total))
    instruction = write_instruction(get_domain("toy"), 1, cells, rules, {(0, c): [] for c in range(cells)})
    task = Task(
        f"toy-hard{seed}",
        "toy",
        1,
        cells,
        decoy_cells,
        ((None,) * cells,),
        items,
        tuple(slots),
        tuple(rules),
        instruction,
        2,
    )
    claimed = Certificate(
        True, "ortools-cp-sat", "claimed", 0, 1, FEASIBLE, INFEASIBLE, INFEASIBLE, decoy_cells, 0
    )
    return task, Answer(task.task_id, (tuple(truth),), tuple(roles), claimed)


def other_items(task: Task, answer: Answer) -> dict[Cell, list[str]]:
    """Per hidden cell, the items that are not its truth."""
    truth = answer.truth_choice()
    return {(s.row, s.col): [i for i in s.candidates if i != truth[(s.row, s.col)]] for s in task.slots}
