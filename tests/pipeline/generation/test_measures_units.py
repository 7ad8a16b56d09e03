"""The measures of a finished task on the tiny hand-built task, whose every value is known:
the decoys' direction per summed attribute (an equal value is its own column), the search
space's logarithm to six digits, and a task whose complete search finds no completion is
refused rather than measured."""

from __future__ import annotations

import dataclasses
import math

import pytest

from pipeline.generation.measures import decoy_direction, measure
from solvers.results import SolverSettings
from tests.tiny import ANSWER, TASK


def test_a_decoy_equal_to_its_truth_is_counted_as_equal_not_above():
    """(0, 1): truth C (cost 3, weight 9), decoys A (3, 4) and D (1, 2); (1, 2): truth G
    (0, 8), decoys E (7, 6) and F (2, 2). Per attribute: [above, below, equal]; A's cost
    equals C's."""
    assert decoy_direction(TASK, ANSWER) == {"cost": [2, 1, 1], "weight": [0, 4, 0]}


def test_the_search_space_s_logarithm_keeps_six_digits():
    """(1 + 2) x (1 + 2) = 9 completions of the hidden cells: log10 9 = 0.954243 (six digits,
    as the answer files record it)."""
    found = measure(TASK, ANSWER, SolverSettings(), node_limit=1_000)
    assert found.search_space == 9
    assert found.log10_search_space == round(math.log10(9), 6) == 0.954243


def test_a_task_whose_complete_search_finds_no_completion_is_refused():
    """A weight floor no completion reaches: the canonical search runs its whole tree, finds
    none, and measure refuses the certificate that claims exactly one instead of measuring."""
    rules = tuple(
        dataclasses.replace(rule, bound=100) if rule.name == "total_weight_min" else rule
        for rule in TASK.global_constraints
    )
    task = dataclasses.replace(TASK, global_constraints=rules)
    with pytest.raises(RuntimeError, match="found 0 completions"):
        measure(task, ANSWER, SolverSettings(), node_limit=1_000)
