"""No published measure may depend on the order a cell's candidates are listed in: the truth's
place in that order is what a reader of the metadata would learn (``dfs_nodes`` once counted
the canonical search to its first completion, which for a task of one hidden cell is exactly
the truth's place among the locally valid candidates)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from pipeline.generation.build import generate_task
from pipeline.generation.keys import GenerationSettings, TaskKey
from pipeline.generation.measures import measure
from solvers.results import SolverSettings


def _shuffled(task, rng: random.Random):
    slots = []
    for slot in task.slots:
        order = list(slot.candidates)
        rng.shuffle(order)
        slots.append(dataclasses.replace(slot, candidates=tuple(order)))
    return dataclasses.replace(task, slots=tuple(slots))


def _published(measures) -> dict:
    """The measures as metadata.parquet and the card carry them."""
    fields = dataclasses.asdict(measures)
    fields["distance_to_ambiguity"].pop("rule")  # which of equally near rules the solver names
    fields["distance_to_ambiguity"].pop("share")
    return fields


@pytest.mark.parametrize(
    ("domain", "rows", "cols", "hidden", "budget"),
    [("toy", 3, 3, 1, 4), ("course", 3, 4, 1, 8), ("meal", 4, 4, 3, 6), ("travel", 5, 5, 8, 10)],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_measures_are_the_same_for_every_order_of_the_candidates(domain, rows, cols, hidden, budget, seed):
    candidates = 6 if domain == "toy" else max(12, budget + 2)
    made = generate_task(
        TaskKey(domain, rows, cols, hidden, budget, candidates, seed, 0), GenerationSettings()
    )
    settings = SolverSettings()
    base = _published(measure(made.task, made.answer, settings, 50_000))
    rng = random.Random(seed)
    for _ in range(3):
        shuffled = _shuffled(made.task, rng)
        assert _published(measure(shuffled, made.answer, settings, 50_000)) == base
