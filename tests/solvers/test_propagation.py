"""Interval propagation against a brute-force reimplementation, and ``min_resistant_share``."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given

from pipeline.generation import GenerationSettings, TaskKey, generate_task
from solvers.checker import locally_valid_candidates, rule_groups, rule_measure
from solvers.propagation import decoy_resistance, propagate
from tests.brute import completions
from tests.examples import LOOSENING_CAP, ROW_REPEAT, THRESHOLD_ZERO, VISIBLE_BREAKS
from tests.strategies import small_tasks


def _supported(task, group, cell, option, domains, holds) -> bool:
    """Brute force: some choice of the group's other hidden cells, each from its current
    domain, makes ``holds(records of the group)`` true with ``option`` in ``cell``."""
    others = [c for c in group if c in domains and c != cell]
    for combo in itertools.product(*(sorted(domains[c]) for c in others)):
        chosen = dict(zip(others, combo, strict=True))
        chosen[cell] = option
        if holds([task.items[chosen.get((r, c)) or task.grid[r][c]] for r, c in group]):
            return True
    return False


def _row_tests(task, rule, group, domains):
    """One test per linear row: repeat_max gives one row per value it can count."""
    if rule.kind != "repeat_max":

        def holds(records):
            measure = rule_measure(rule, records)
            return measure <= rule.bound if rule.is_upper_bound else measure >= rule.bound

        return [holds]
    values = {
        task.items[i][rule.attribute]
        for c in group
        for i in (domains[c] if c in domains else [task.grid[c[0]][c[1]]])
    }
    return [lambda records, v=v: sum(r[rule.attribute] == v for r in records) <= rule.bound for v in values]


def brute_round(task, domains) -> set:
    removed = set()
    for rule in task.global_constraints:
        for group in rule_groups(rule, task.rows, task.cols):
            for holds in _row_tests(task, rule, group, domains):
                for cell in (c for c in group if c in domains):
                    for option in domains[cell]:
                        if not _supported(task, group, cell, option, domains, holds):
                            removed.add((cell, option))
    return removed


def brute_propagate(task):
    domains = {(s.row, s.col): set(locally_valid_candidates(task, s)) for s in task.slots}
    first = None
    while True:
        removed = brute_round(task, domains) if all(domains.values()) else set()
        for cell, option in removed:
            domains[cell].discard(option)
        if first is None:
            first = {c: frozenset(v) for c, v in domains.items()}
        if not removed:
            return first, {c: frozenset(v) for c, v in domains.items()}


@example(ROW_REPEAT)
@example(VISIBLE_BREAKS)
@example(LOOSENING_CAP)
@example(THRESHOLD_ZERO)
@given(small_tasks())
def test_propagation_matches_brute_force_supports(task):
    result = propagate(task)
    first, fixpoint = brute_propagate(task)
    assert result.after_one_round == first
    assert result.fixpoint == fixpoint


@example(ROW_REPEAT)
@example(LOOSENING_CAP)
@given(small_tasks())
def test_propagation_never_removes_an_option_of_a_completion(task):
    """Soundness: every option used by some valid completion survives to the fixpoint."""
    result = propagate(task)
    for choice in completions(task):
        for cell, item_id in choice.items():
            assert item_id in result.fixpoint[cell]


def test_resistance_counts_add_up_on_generated_tasks():
    made = generate_task(TaskKey("course", 5, 7, 11, 19, 25, seed=4))
    record = made.answer.measures.propagation
    decoys = {(r.row, r.col): list(r.decoys) for r in made.answer.roles}
    assert record == decoy_resistance(made.task, decoys)
    assert record.decoys == 19
    assert 0 <= record.one_round <= record.fixpoint <= 19
    assert record.resistant == 19 - record.fixpoint


@pytest.mark.parametrize(
    "domain,hidden,budget", [("toy", 5, 6), ("course", 7, 8), ("travel", 11, 15), ("workforce", 5, 4)]
)
def test_min_resistant_share_is_met_on_every_qualifying_task(domain, hidden, budget):
    rows, cols, k = (3, 3, 5) if domain == "toy" else (5, 7, 25)
    settings = GenerationSettings(min_resistant_share=0.5)
    for seed in range(3):
        made = generate_task(TaskKey(domain, rows, cols, hidden, budget, k, seed=seed), settings)
        decoy_cells = sum(1 for role in made.answer.roles if role.decoys)
        record = made.answer.measures.propagation
        assert made.answer.certificate.ok
        if decoy_cells >= 2:
            assert record.resistant * 2 >= record.decoys, record


def test_resistance_setting_changes_tasks_and_zero_keeps_todays_behaviour():
    key = TaskKey("meal", 5, 7, 11, 19, 25, seed=2)
    plain = generate_task(key)
    asked = generate_task(key, GenerationSettings(min_resistant_share=0.0))
    assert plain.task.to_dict() == asked.task.to_dict()
