"""Stage 2 on small hand-made drafts: the truth of a cell with decoys is any of the drawn
candidates with equal chance (the first, a middle one or the last drawn), and a decoy budget
that does not fit the cells asked for takes as many more cells as it needs."""

from __future__ import annotations

import random
from collections import Counter

from domains import get_domain
from gridbench_core.task import SlotRule
from pipeline.generation.candidates import allocate_decoys, draw_exchangeable
from pipeline.generation.draft import Draft
from pipeline.generation.sample import sample_passing

CELL = (0, 0)


def _draft(seed: int) -> Draft:
    domain = get_domain("toy")
    draft = Draft(domain, 2, 3, random.Random(seed), random.Random(seed + 10_000))
    draft.hidden = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    draft.slot_rules[CELL] = [SlotRule("cost", "<=", 8)]
    draft.truth = [["" for _ in range(3)] for _ in range(2)]
    draft.truth[0][0] = draft.new_item(sample_passing(domain, draft.slot_rules[CELL], draft.rng))
    return draft


def test_the_truth_is_drawn_from_every_position_of_the_pool_alike():
    """Over 300 seeds, a cell with 2 decoys: the truth is the item drawn first (stage 1's), the
    second or the third (the last) about a third of the time each; never one position left out."""
    positions: Counter[int] = Counter()
    for seed in range(300):
        draft = _draft(seed)
        draw_exchangeable(draft, CELL, 2)
        drawn = list(draft.items)  # in the order they were drawn
        positions[drawn.index(draft.truth[0][0])] += 1
        assert sorted(drawn) == sorted([draft.truth[0][0], *draft.decoys[CELL]])
    assert set(positions) == {0, 1, 2}
    assert all(70 <= count <= 130 for count in positions.values()), positions


def test_a_budget_past_the_cells_asked_for_takes_enough_cells():
    """B = 5 with at most 2 decoys a cell cannot sit in 1 cell, nor in 2: it takes 3 (5 / 2
    rounded up), every one holding 1 or 2 decoys."""
    for seed in range(20):
        shares = allocate_decoys(_draft(seed), 5, 1, 2)
        assert len(shares) == 3 and sum(shares.values()) == 5
        assert all(1 <= share <= 2 for share in shares.values())
    assert len(allocate_decoys(_draft(0), 4, 1, 2)) == 2  # a multiple: exactly enough
