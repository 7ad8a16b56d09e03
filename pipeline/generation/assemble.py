"""Turn a draft into the frozen agent-facing :class:`Task` and its :class:`Answer`."""

from __future__ import annotations

from gridbench_core.task import Answer, Slot, SlotRoles, Task
from pipeline.generation.draft import Cell, Draft
from pipeline.generation.instruction import write_instruction


def build_task(
    draft: Draft,
    task_id: str,
    decoy_budget: int,
    candidates_per_slot: int,
    order: dict[Cell, list[str]] | None = None,
) -> Task:
    """The task file's content. ``order`` fixes candidate order; by default it is shuffled."""
    grid = tuple(
        tuple(None if (r, c) in draft.slot_rules else draft.truth[r][c] for c in range(draft.cols))
        for r in range(draft.rows)
    )
    slots = []
    for cell in draft.hidden:
        if order is not None and cell in order:
            candidates = list(order[cell])
        else:
            candidates = candidate_ids(draft, cell)
            draft.rng.shuffle(candidates)
        slots.append(Slot(cell[0], cell[1], tuple(candidates), tuple(draft.slot_rules[cell])))
    used = {item_id for row in grid for item_id in row if item_id is not None}
    used |= {item_id for slot in slots for item_id in slot.candidates}
    return Task(
        task_id=task_id,
        domain=draft.domain.name,
        rows=draft.rows,
        cols=draft.cols,
        decoy_budget=decoy_budget,
        grid=grid,
        items={item_id: draft.items[item_id] for item_id in sorted(used)},
        slots=tuple(slots),
        global_constraints=tuple(draft.rules),
        instruction=write_instruction(draft.domain, draft.rows, draft.cols, draft.rules, draft.slot_rules),
        candidates_per_slot=candidates_per_slot,
    )


def candidate_ids(draft: Draft, cell: Cell) -> list[str]:
    """``cell``'s candidate ids in role order: the truth, then its decoys, then its filtered items."""
    truth = draft.truth[cell[0]][cell[1]]
    return [truth, *draft.decoys.get(cell, []), *draft.filtered.get(cell, [])]


def truth_choice(draft: Draft) -> dict[Cell, str]:
    """The truth item id of each hidden cell of ``draft``."""
    return {cell: draft.truth[cell[0]][cell[1]] for cell in draft.hidden}


def build_answer(draft: Draft, task_id: str) -> Answer:
    """The answer file's content: the truth grid and each hidden cell's roles."""
    roles = tuple(
        SlotRoles(
            cell[0],
            cell[1],
            draft.truth[cell[0]][cell[1]],
            tuple(draft.decoys.get(cell, [])),
            tuple(draft.filtered.get(cell, [])),
        )
        for cell in draft.hidden
    )
    return Answer(task_id=task_id, truth=tuple(tuple(row) for row in draft.truth), roles=roles)
