"""The finer difficulty measures (issue 26) against brute force on small grids:
``search_nodes`` is the size of the complete search tree that brute-force propagation leaves
(recounted here by a recursive reference), ``joint_bits`` what brute-force propagation and the
enumeration of every region on its own leave; neither depends on the order of candidates,
cells or rules, and on generated caged toy tasks the regions do not decide alone."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pipeline.generation import GenerationSettings, TaskKey, generate_task
from solvers.checker import locally_valid_candidates, rule_excess, rule_measure
from solvers.ladder import joint_bits, search_nodes
from tests.solvers.test_ladder import TWO_SUM, brute_fixpoint
from tests.strategies import small_tasks


def _branch(domains):
    open_cells = [cell for cell, ids in domains.items() if len(ids) > 1]
    return min(open_cells, key=lambda c: (len(domains[c]), c)) if open_cells else None


def brute_nodes(task, domains) -> int:
    """The node count by its definition: this node, and below it every option of the open cell
    with the fewest options, each propagated by brute force."""
    domains = brute_fixpoint(task, domains)
    if domains is None:
        return 1
    cell = _branch(domains)
    if cell is None:
        return 1
    total = 1
    for option in sorted(domains[cell]):
        trial = {c: set(ids) for c, ids in domains.items()}
        trial[cell] = {option}
        total += brute_nodes(task, trial)
    return total


def _slot_domains(task):
    return {(s.row, s.col): set(locally_valid_candidates(task, s)) for s in task.slots}


@given(small_tasks())
@example(TWO_SUM)
def test_search_nodes_is_the_brute_force_search_tree(task):
    assert search_nodes(task, 10**6) == (brute_nodes(task, _slot_domains(task)), False)


def test_the_two_sum_task_needs_a_search_of_three_nodes():
    assert search_nodes(TWO_SUM) == (3, False)  # the root (a0, a1 left), then each decided at once


@given(small_tasks(), st.integers(0, 2**32))
def test_the_finer_measures_do_not_depend_on_order(task, seed):
    rng = random.Random(seed)
    slots = tuple(
        dataclasses.replace(s, candidates=tuple(rng.sample(s.candidates, len(s.candidates))))
        for s in task.slots
    )
    rules = tuple(rng.sample(task.global_constraints, len(task.global_constraints)))
    shuffled = dataclasses.replace(task, slots=tuple(rng.sample(slots, len(slots))), global_constraints=rules)
    assert search_nodes(shuffled) == search_nodes(task)
    assert joint_bits(shuffled) == joint_bits(task)


def test_a_node_limit_is_reported():
    made = generate_task(TaskKey("course", 5, 7, 21, 25, 27, seed=1))
    nodes, capped = search_nodes(made.task)
    assert nodes > 2 and not capped
    assert search_nodes(made.task, nodes - 1) == (nodes - 1, True)
    assert search_nodes(made.task, nodes) == (nodes, False)


def brute_joint_bits(task) -> float:
    """Brute-force supports and each region's combinations, repeated until nothing changes."""
    regions = {}
    for rule in task.global_constraints:
        if rule.scope == "cells":
            regions.setdefault(rule.cells, []).append(rule)
    domains = _slot_domains(task)
    while True:
        domains = brute_fixpoint(task, domains)
        if domains is None:
            return 0.0
        changed = False
        for cells, rules in regions.items():
            hidden = [cell for cell in cells if cell in domains]
            fixed = [task.items[task.grid[r][c]] for r, c in cells if (r, c) not in domains]
            used = {cell: set() for cell in hidden}
            for combo in itertools.product(*(sorted(domains[cell]) for cell in hidden)):
                records = fixed + [task.items[i] for i in combo]
                if all(rule_excess(rule, rule_measure(rule, records)) <= 0 for rule in rules):
                    for cell, item in zip(hidden, combo, strict=True):
                        used[cell].add(item)
            for cell in hidden:
                if used[cell] != domains[cell]:
                    domains[cell] = used[cell]
                    changed = True
        if not changed:
            return round(sum(math.log2(len(ids)) for ids in domains.values() if ids), 6)


CAGED = [
    TaskKey("toy", rows, cols, hidden, budget, 6, seed=seed)
    for rows, cols, hidden, budget in ((3, 3, 5, 6), (3, 4, 6, 8), (4, 4, 8, 10))
    for seed in range(4)
]


@pytest.fixture(scope="module")
def caged_tasks():
    return [generate_task(key, GenerationSettings(cage_bits=0.0)).task for key in CAGED]


def test_joint_bits_is_brute_force_propagation_and_regions_alone(caged_tasks):
    assert all(any(rule.scope == "cells" for rule in task.global_constraints) for task in caged_tasks)
    for task in caged_tasks:
        assert joint_bits(task) == brute_joint_bits(task)
        assert search_nodes(task, 10**6) == (brute_nodes(task, _slot_domains(task)), False)


@given(small_tasks())
@example(TWO_SUM)
def test_joint_bits_without_regions_is_the_fixpoint_in_bits(task):
    expected = brute_joint_bits(task)
    assert joint_bits(task) == expected
    if not any(rule.scope == "cells" for rule in task.global_constraints):
        domains = brute_fixpoint(task, _slot_domains(task))
        bits = 0.0 if domains is None else sum(math.log2(len(ids)) for ids in domains.values() if ids)
        assert joint_bits(task) == round(bits, 6)
