"""The reasoning ladder against brute force on small grids: every rung is sound (never drops
an option that a completion uses), a rung that decides a task agrees with enumeration, each
rung is what its definition says (one round, the fixpoint, singleton probing: recomputed here
by brute-force supports), and the depth does not depend on the order of anything."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gridbench_core.task import GlobalRule, Slot, Task
from pipeline.generation import GenerationSettings, TaskKey, generate_task
from solvers.ladder import PROBING, RUNGS, SEARCH, reasoning_depth, rung_domains, rung_index
from tests.brute import completions
from tests.solvers.test_propagation import brute_round
from tests.strategies import small_tasks


def brute_fixpoint(task, domains):
    """Brute-force supports, round after round, from ``domains`` (False on a wipe-out)."""
    domains = {cell: set(ids) for cell, ids in domains.items()}
    while all(domains.values()):
        removed = brute_round(task, domains)
        if not removed:
            return domains
        for cell, option in removed:
            domains[cell].discard(option)
    return None


def brute_probing(task, domains):
    """Singleton consistency by its definition: drop an option whose assignment wipes out a
    domain under brute-force propagation, until nothing changes."""
    domains = brute_fixpoint(task, domains)
    changed = domains is not None
    while changed:
        changed = False
        for cell in sorted(domains):
            for option in sorted(domains[cell]):
                trial = {c: set(ids) for c, ids in domains.items()}
                trial[cell] = {option}
                if brute_fixpoint(task, trial) is None:
                    domains[cell].discard(option)
                    changed = True
        domains = brute_fixpoint(task, domains) if changed else domains
        if domains is None:
            return None
    return domains


TWO_SUM = Task(  # two cells whose windows pin a pair: propagation keeps all, probing decides
    "two-sum",
    "toy",
    1,
    2,
    0,
    ((None, None),),
    {
        **{
            f"a{k}": {"id": f"a{k}", "name": "a", "cost": k, "weight": 3 - k, "color": "red"}
            for k in range(4)
        },
        **{f"b{k}": {"id": f"b{k}", "name": "b", "cost": k, "weight": k, "color": "red"} for k in range(4)},
    },
    (Slot(0, 0, ("a0", "a1", "a2", "a3"), ()), Slot(0, 1, ("b0", "b1", "b2", "b3"), ())),
    (
        GlobalRule("cost_max", "sum_max", "cost", 3, "cells", cells=((0, 0), (0, 1))),
        GlobalRule("cost_min", "sum_min", "cost", 3, "cells", cells=((0, 0), (0, 1))),
        GlobalRule("weight_min", "sum_min", "weight", 5, "grid"),
    ),
)


NO_COMPLETION = Task(  # the sum pairs a0 with b1 or a1 with b0; each pair repeats a colour
    "no-completion",
    "toy",
    1,
    2,
    0,
    ((None, None),),
    {
        "a0": {"id": "a0", "name": "a", "cost": 0, "color": "red"},
        "a1": {"id": "a1", "name": "a", "cost": 1, "color": "blue"},
        "b0": {"id": "b0", "name": "b", "cost": 0, "color": "blue"},
        "b1": {"id": "b1", "name": "b", "cost": 1, "color": "red"},
    },
    (Slot(0, 0, ("a0", "a1"), ()), Slot(0, 1, ("b0", "b1"), ())),
    (
        GlobalRule("cost_max", "sum_max", "cost", 1, "grid"),
        GlobalRule("cost_min", "sum_min", "cost", 1, "grid"),
        GlobalRule("one_each", "repeat_max", "color", 1, "grid"),
    ),
)


def test_probing_finds_no_completion_where_there_is_none_and_never_decides_it():
    """Propagation keeps every option of NO_COMPLETION; probing refutes a0, and what that
    leaves (a1, hence b0, a repeated colour) has no completion either: the probing stage empties
    a cell. It must never hand over one option per cell (a "decided" grid that is no completion)."""
    assert completions(NO_COMPLETION) == []
    slot_checked, one_round, fixpoint, probed = rung_domains(NO_COMPLETION)
    assert fixpoint == slot_checked  # nothing for propagation alone
    assert any(not ids for ids in probed.values())
    assert not all(len(ids) == 1 for ids in probed.values())
    depth = reasoning_depth(NO_COMPLETION)
    # options beyond one per cell after each rung: an emptied cell has none (never a negative count)
    assert (depth.name, depth.open_after) == ("search", [2, 2, 2, 0])


@given(small_tasks())
@example(TWO_SUM)
@example(NO_COMPLETION)
def test_every_rung_is_sound_and_deciding_agrees_with_enumeration(task):
    found = completions(task)
    stages = rung_domains(task)
    for rung, domains in enumerate(stages):
        for choice in found:
            assert all(choice[cell] in domains[cell] for cell in choice), RUNGS[rung]
        if all(len(ids) == 1 for ids in domains.values()):  # decides: at most that completion
            assert found in ([], [{cell: next(iter(ids)) for cell, ids in domains.items()}]), RUNGS[rung]
    depth = reasoning_depth(task)
    if len(found) == 1:
        assert depth.rung <= SEARCH and depth.name == RUNGS[depth.rung]
        if depth.rung < SEARCH:
            assert all(len(ids) == 1 for ids in stages[depth.rung].values())
        assert all(
            any(len(ids) != 1 for ids in stages[r].values()) for r in range(min(depth.rung, PROBING + 1))
        )


@given(small_tasks())
@example(TWO_SUM)
@example(NO_COMPLETION)
def test_probing_is_singleton_consistency_by_brute_force(task):
    slot_checked, _, fixpoint, probed = rung_domains(task)
    expected = brute_probing(task, {cell: set(ids) for cell, ids in slot_checked.items()})
    if expected is None:
        assert any(not ids for ids in probed.values()) or any(not ids for ids in fixpoint.values())
    else:
        assert probed == {cell: frozenset(ids) for cell, ids in expected.items()}


def test_the_two_sum_task_needs_probing():
    assert reasoning_depth(TWO_SUM).name == "probing"
    assert reasoning_depth(TWO_SUM).open_after == [6, 2, 2, 0]  # weight keeps a0, a1 and b2, b3


@given(small_tasks(), st.integers(0, 2**32))
def test_the_depth_does_not_depend_on_candidate_or_rule_order(task, seed):
    rng = random.Random(seed)
    slots = tuple(
        dataclasses.replace(s, candidates=tuple(rng.sample(s.candidates, len(s.candidates))))
        for s in task.slots
    )
    rules = tuple(rng.sample(task.global_constraints, len(task.global_constraints)))
    shuffled = dataclasses.replace(task, slots=tuple(rng.sample(slots, len(slots))), global_constraints=rules)
    assert reasoning_depth(shuffled) == reasoning_depth(task)


def test_the_recorded_depth_is_the_ladder_s_and_min_depth_holds():
    made = generate_task(TaskKey("course", 5, 7, 11, 15, 25, seed=1), GenerationSettings(min_depth="probing"))
    assert made.answer.measures.depth == reasoning_depth(made.task)
    assert made.answer.measures.depth.rung >= rung_index("probing")
    assert generate_task(
        TaskKey("course", 5, 7, 11, 15, 25, seed=1)
    ).answer.measures.depth == reasoning_depth(
        generate_task(TaskKey("course", 5, 7, 11, 15, 25, seed=1)).task
    )


def test_min_depth_is_capped_by_what_the_decoys_allow():
    one_cell = generate_task(
        TaskKey("course", 5, 7, 5, 1, 25, seed=0), GenerationSettings(min_depth="search")
    )
    assert one_cell.answer.measures.depth.name == "one_round"
    none = generate_task(TaskKey("course", 5, 7, 5, 0, 25, seed=0), GenerationSettings(min_depth="search"))
    assert none.answer.measures.depth.name == "slot"


def reference_probing(task):
    """Singleton consistency written independently of the ladder: the round-based propagation
    of solvers.propagation, sweep after sweep over every option, until a sweep removes
    nothing. Returns (domains, sweeps that removed something); None domains on a wipe-out."""
    from solvers.propagation import propagate

    domains = {cell: set(ids) for cell, ids in propagate(task).fixpoint.items()}
    sweeps = 0
    while all(domains.values()):
        removed = False
        for cell in sorted(domains):
            for option in sorted(domains[cell]):
                if len(domains[cell]) == 1:
                    break
                trial = {c: sorted(ids) for c, ids in domains.items()}
                trial[cell] = [option]
                if not all(propagate(task, trial).fixpoint.values()):
                    domains[cell].discard(option)
                    removed = True
                    fixed = propagate(task, {c: sorted(ids) for c, ids in domains.items()}).fixpoint
                    domains = {c: set(ids) for c, ids in fixed.items()}
        if not removed:
            return domains, sweeps
        sweeps += 1
    return None, sweeps


@pytest.fixture(scope="module")
def largest_cells():
    """Tasks at the paper's largest 5x7 cell (H = 21, B = 25) that need probing."""
    out = []
    for seed in range(6):
        for domain in ("course", "meal", "travel", "workforce"):
            made = generate_task(TaskKey(domain, 5, 7, 21, 25, 27, seed=seed))
            if made.answer.measures.depth.rung >= PROBING:
                out.append(made)
    return out


def test_probing_at_the_paper_s_largest_cells_is_singleton_consistency(largest_cells):
    """The probing rung against the independent reference on real tasks, some of which need
    more than one sweep (a probing that stopped after one sweep changes their depth)."""
    sweeps = []
    for made in largest_cells:
        expected, count = reference_probing(made.task)
        sweeps.append(count)
        probed = rung_domains(made.task)[PROBING]
        assert expected is not None and probed == {c: frozenset(ids) for c, ids in expected.items()}
        assert made.answer.measures.depth == reasoning_depth(made.task)
    assert max(sweeps) >= 2, sweeps  # the case a one-sweep probing gets wrong is here


def test_the_search_branches_on_the_fewest_options_then_row_then_column():
    from solvers.ladder import _branch

    domains = {
        (2, 0): {"a", "b"},
        (0, 3): {"a", "b"},
        (1, 1): {"a", "b", "c"},
        (0, 4): {"a", "b"},
        (3, 3): {"x"},
    }
    assert _branch(domains) == (0, 3)
    assert _branch({(1, 0): {"a", "b"}, (0, 1): {"a", "b"}}) == (0, 1)  # row first, not column
    assert _branch({(1, 0): {"a", "b", "c"}, (0, 1): {"a", "b", "c", "d"}}) == (1, 0)
    assert _branch({(0, 0): {"a"}}) is None
