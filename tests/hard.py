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
from gridbench_core.records import Certificate
from gridbench_core.task import Answer, GlobalRule, Slot, SlotRoles, Task
from pipeline.generation.instruction import write_instruction
from solvers.results import FEASIBLE, INFEASIBLE

Cell = tuple[int, int]


def hard_task(
    cells: int = 30,
    seed: int = 0,
    decoy_cells: int | None = None,
    attributes: tuple[str, ...] = ("cost", "weight"),
) -> tuple[Task, Answer]:
    """The task file and its answer, valid for ``verify`` (toy domain, rendered instruction;
    the answer claims a certificate that holds). The other item of each of the first
    ``decoy_cells`` cells (default: all) is a decoy; elsewhere it is in no role. With one of
    ``attributes`` pinned, a loosened rule is easy to satisfy but its least loosening is not."""
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
    for attribute in attributes:
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


def twin_task(cells: int = 20, seed: int = 100) -> tuple[Task, dict[Cell, str]]:
    """:func:`hard_task`'s construction with a second completion planted: cells 0 and 1 offer
    the same two items' values crosswise, so swapping both keeps every sum. The truth is never
    unique, so INFEASIBLE for "another completion" is always wrong."""
    task, answer = hard_task(cells, seed)
    items = {key: dict(value) for key, value in task.items.items()}
    first, second = task.slots[0].candidates, task.slots[1].candidates
    for attribute in ("cost", "weight"):
        items[second[0]][attribute] = items[first[1]][attribute]
        items[second[1]][attribute] = items[first[0]][attribute]
    truth = {(0, 0): first[0], (0, 1): second[0]}
    truth.update({cell: item for cell, item in answer.truth_choice().items() if cell[1] > 1})
    rules = []
    for rule in task.global_constraints:
        total = sum(int(items[item][rule.attribute]) for item in truth.values())
        rules.append(rule.with_bound(total))
    return Task(task.task_id, "toy", 1, cells, 0, task.grid, items, task.slots, tuple(rules)), truth
