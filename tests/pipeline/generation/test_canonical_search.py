"""The level-at-a-time canonical search counts exactly the nodes (and, below the node limit,
the completions) of its recursive definition."""

from __future__ import annotations

import pytest

from pipeline.generation import measures
from pipeline.generation.build import generate_task
from pipeline.generation.keys import GenerationSettings, TaskKey


@pytest.mark.parametrize("domain", ["toy", "course", "travel"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("list_rows", [0, 3, 16, 10**9])
def test_iterative_and_recursive_searches_agree(domain, seed, list_rows, monkeypatch):
    """``list_rows``: the prefixes held in Python lists before numpy takes over (0: numpy from
    the second depth on; 10**9: never)."""
    monkeypatch.setattr(measures.CanonicalSearch, "LIST_ROWS", list_rows)
    candidates = 6 if domain == "toy" else 25
    shapes = [(4, 4, 3, 2), (5, 5, 8, 5), (5, 7, 14, 12)]
    if domain != "toy":
        shapes.append((10, 10, 30, 20))  # the train set's largest part: lower-bound rows, cages
    for rows, cols, hidden, budget in shapes:
        made = generate_task(
            TaskKey(domain, rows, cols, hidden, budget, max(candidates, budget + 2), seed, 0),
            GenerationSettings(),
        )
        for limit in (7, 300, 50_000):
            reference = measures.CanonicalSearch(made.task, limit)
            reference.completions = 0
            try:
                reference._search(0)
                capped = False
            except measures._LimitReached:
                capped = True
            # past the limit the depth-first count holds the completions met before it
            # (which depend on the candidates' order): the search reports none
            expected = (reference.nodes, 0 if capped else reference.completions, capped)
            assert measures.CanonicalSearch(made.task, limit).run() == expected
            assert capped or reference.completions == 1  # a certified task: one completion
