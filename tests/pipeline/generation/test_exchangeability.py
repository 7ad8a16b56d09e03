"""Exchangeable candidates: among a cell's locally valid candidates, the truth's rank on every
attribute is uniform (chi-square over many generated tasks, fixed keys, so never flaky).

The rank of the truth is taken with a seeded random tie-break and spread into [0, 1)
(``(rank + U) / options``): under exchangeability that number is exactly uniform whatever the
number of options, so cells of every size pool into one test. Categorical attributes are
ranked by how common the candidate's value is in its cell (the leak a biased repair makes:
"the truth's category is the rarest"). The same statistic applied to a biased pick must fail,
so the test has the power to see a leak of the size the audit found.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from domains import NumericAttribute, get_domain
from pipeline.generation import TaskKey, generate_task
from pipeline.generation.keys import GenerationSettings
from solvers.checker import locally_valid_candidates

BINS = 5
ALPHA = 1e-3


def _keys(domain: str) -> list[TaskKey]:
    if domain == "toy":
        return [TaskKey("toy", 3, 3, 6, 8, 6, seed=s) for s in range(200)]
    return [
        TaskKey(domain, 5, 7, h, b, 25, seed=s) for s in range(18) for h, b in ((7, 10), (11, 15), (15, 19))
    ]


def _cells(domain: str, settings: GenerationSettings | None = None) -> list[tuple[list[dict], int]]:
    """(option records, index of the truth) for every cell with decoys."""
    out = []
    for key in _keys(domain):
        made = generate_task(key, settings)
        truth = {(r.row, r.col): r.truth for r in made.answer.roles}
        for slot in made.task.slots:
            options = locally_valid_candidates(made.task, slot)
            if len(options) > 1:
                records = [made.task.items[i] for i in options]
                out.append((records, options.index(truth[(slot.row, slot.col)])))
    return out


def _score(records: list[dict], attribute: str, numeric: bool) -> list[float]:
    if numeric:
        return [float(r[attribute]) for r in records]
    counts = Counter(r[attribute] for r in records)
    return [float(counts[r[attribute]]) for r in records]


def _uniform_position(scores: list[float], index: int, rng: random.Random) -> float:
    below = sum(s < scores[index] for s in scores)
    ties = sum(s == scores[index] for s in scores)  # the truth itself included
    rank = below + rng.randrange(ties)
    return (rank + rng.random()) / len(scores)


def _p_value(cells, attribute: str, numeric: bool, pick=None) -> float:
    rng = random.Random(f"exchangeability|{attribute}")
    bins = [0] * BINS
    for records, truth in cells:
        index = truth if pick is None else pick(records, truth, rng)
        position = _uniform_position(_score(records, attribute, numeric), index, rng)
        bins[min(int(position * BINS), BINS - 1)] += 1
    from scipy.stats import chisquare  # a second to import: only in the worker that runs these

    return float(chisquare(bins).pvalue)


@pytest.fixture(
    scope="module",
    params=[
        "toy",
        "course",
        pytest.param("travel", marks=pytest.mark.slow),
        "course/caged",  # cage windows (large budgets), forced on small grids
        pytest.param("meal/caged", marks=pytest.mark.slow),
    ],
)
def cells(request):
    domain, _, mode = request.param.partition("/")
    settings = GenerationSettings(cage_bits=0.0) if mode else None
    return domain, _cells(domain, settings)


def test_truth_rank_is_uniform_on_every_attribute(cells):
    domain, sample = cells
    assert len(sample) >= 180, len(sample)
    for attribute in get_domain(domain).attributes:
        numeric = isinstance(attribute, NumericAttribute)
        p_value = _p_value(sample, attribute.name, numeric)
        assert p_value > ALPHA, (domain, attribute.name, p_value)


def test_the_statistic_sees_a_leak_of_the_size_once_measured(cells):
    """A pick that prefers the lowest value of one attribute in one cell of three (a leak much
    like "never best, never bad") is rejected: the test is able to fail."""
    domain, sample = cells
    attribute = next(a for a in get_domain(domain).attributes if isinstance(a, NumericAttribute))

    def biased(records, truth, rng):
        if rng.random() < 1 / 3:
            return min(range(len(records)), key=lambda k: records[k][attribute.name])
        return truth

    assert _p_value(sample, attribute.name, True, biased) < ALPHA
