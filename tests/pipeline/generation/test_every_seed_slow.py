"""Every preset at every seed (issue 26): the hardest cells of the paper presets and of 10x10
(the largest B at the largest H, and the cells an outside run saw fail: 5x10 H=15 B=30,
10x10 H=60 B=30) certify for twenty seeds in each of the six domains. Slow: a few minutes;
bench/bench_seeds.py measures the failure rate of every preset, 15x15 and 20x20 included."""

from __future__ import annotations

import pytest

from pipeline.generation import GenerationSettings, TaskKey, generate_task

DOMAINS = ("course", "meal", "pc_build", "shopping", "travel", "workforce")
CELLS = [  # rows, cols, H, B, K
    (5, 7, 21, 25, 27),
    (5, 10, 15, 30, 35),
    (5, 10, 25, 30, 35),
    (10, 10, 60, 30, 25),
    (10, 10, 60, 120, 25),
]


@pytest.mark.slow
@pytest.mark.parametrize("cell", CELLS, ids=lambda c: f"{c[0]}x{c[1]}-H{c[2]}-B{c[3]}")
@pytest.mark.parametrize("domain", DOMAINS)
def test_the_hardest_cells_certify_at_every_seed(cell, domain):
    rows, cols, hidden, budget, candidates = cell
    for seed in range(2000, 2020):
        made = generate_task(
            TaskKey(domain, rows, cols, hidden, budget, candidates, seed, 0), GenerationSettings()
        )
        assert made.answer.certificate.ok and made.answer.certificate.uniqueness == "INFEASIBLE"
