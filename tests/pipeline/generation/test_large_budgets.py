"""Large decoy budgets: cages of decoy cells with windows of their own (issue 17).

With many exchangeable decoys the domain's few grid sums let combinations of swaps cancel, so
above ``cage_bits`` the generator groups the decoy cells into cages and states, per cage, a
window on every numeric attribute (``scope: "cells"``, task format 2). Nothing else changes:
the visible cells, candidates and truth are drawn as for small budgets. Issue 26: the cages
lie on a ring (each caged cell in two cages), one window each. These tests check each
piece on its own, the whole against brute-force enumeration on small grids (cages forced with
``cage_bits=0``), and that keys below the threshold are drawn exactly as before.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import NumericAttribute
from gridbench_core.vocabulary import RuleKind, Scope
from pipeline.generation.build import draw_draft, generate_task
from pipeline.generation.cages import draw_cages
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey
from pipeline.generation.validate import search_bits
from solvers.checker import enumerate_completions, rule_measure
from solvers.results import WALL_BACKSTOP
from tests.brute import distance

FORCED = GenerationSettings(cage_bits=0.0)
NEVER = GenerationSettings(cage_bits=10_000.0)
# A large-budget key and the seed of each domain the tests generate it for (any seed certifies;
# these are among the quicker ones to repair, a few seconds each rather than ten or more)
LARGE_SEEDS = {"course": 1, "shopping": 4}


def large_key(name: str) -> TaskKey:
    return TaskKey(name, 10, 10, 60, 120, 25, LARGE_SEEDS[name], 0)


@cache
def generated(key: TaskKey):
    """``generate_task(key)``, made once per worker and shared read-only by the tests of this
    module that only read the task (those that check determinism generate it a second time)."""
    return generate_task(key)


@given(
    cells=st.integers(0, 40),
    size=st.integers(1, 8),
    free_bits=st.sampled_from([0.0, 5.0, 16.0]),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=200, deadline=None)
def test_cages_lay_every_decoy_cell_but_a_free_few_on_a_ring(cells, size, free_bits, seed):
    from domains import get_domain

    rng = random.Random(seed)
    draft = Draft(get_domain("toy"), 7, 7, random.Random(seed))
    everything = [(r, c) for r in range(7) for c in range(7)]
    chosen = rng.sample(everything, cells)
    draft.decoys = {cell: ["x"] * rng.randint(1, 9) for cell in chosen}
    draft.decoys[next(c for c in everything if c not in chosen)] = []  # no decoys: never caged
    cages = draw_cages(draft, size, free_bits)
    caged = sorted({cell for cage in cages for cell in cage})
    free = [cell for cell in chosen if cell not in caged]
    assert set(caged) <= set(chosen)
    bits = sum(math.log2(1 + len(draft.decoys[cell])) for cell in free)
    assert bits <= free_bits + 1e-9 or len(chosen) == 1  # the free cells fit in free_bits ...
    total = sum(math.log2(1 + len(draft.decoys[cell])) for cell in chosen)
    # ... and cages come only when the cells do not all fit, and at least two can share one
    assert bool(cages) == (total > free_bits + 1e-9 and len(chosen) >= 2)
    assert all(list(cage) == sorted(cage) for cage in cages) and cages == sorted(set(cages))
    if not cages:
        return
    assert all(len(cage) == min(size, len(caged)) for cage in cages)
    membership = Counter(cell for cage in cages for cell in cage)
    if len(caged) > size:  # a ring: as many cages as cells, every cell in `size` of them
        assert set(membership.values()) == {size} and len(cages) == len(caged)
    if size >= 2:  # consecutive cages overlap: the ring is connected
        assert _connected(cages)


def _connected(cages) -> bool:
    seen, todo = {cages[0]}, [cages[0]]
    while todo:
        cage = todo.pop()
        for other in cages:
            if other not in seen and set(other) & set(cage):
                seen.add(other)
                todo.append(other)
    return len(seen) == len(cages)


@pytest.mark.parametrize("name", ["course", "travel", "workforce"])
def test_cages_leave_the_truth_grid_and_candidates_as_drawn(name):
    """A caged draft differs from an uncaged one only in its rules: the grid, the candidates
    and the truth are the same draw (nothing makes the truth grid regular)."""
    key = TaskKey(name, 10, 10, 60, 120, 25, 3, 0)
    caged, plain = draw_draft(key, FORCED, 0), draw_draft(key, NEVER, 0)
    assert caged.cages and not plain.cages
    assert caged.truth == plain.truth and caged.decoys == plain.decoys and caged.items == plain.items
    numeric = [a.name for a in caged.domain.attributes if isinstance(a, NumericAttribute)]
    region_rules = [r for r in caged.rules if r.scope == Scope.CELLS]
    assert len(region_rules) == 2 * FORCED.cage_attributes * len(caged.cages)
    assert [r.name for r in caged.rules if r.scope != Scope.CELLS] == [r.name for r in plain.rules]
    for rule in region_rules:
        assert rule.cells in caged.cages and rule.attribute in numeric
        total = rule_measure(rule, [caged.truth_record(cell) for cell in rule.cells])
        assert rule.bound <= total if rule.kind == RuleKind.SUM_MIN else rule.bound >= total


def test_a_caged_redraw_keeps_each_bound_s_radius_and_offset():
    """Repair of a caged draft re-draws whole cells without undoing its tightenings: every
    bound keeps its radius and offset and is placed again around the new truth."""
    from pipeline.generation.bounds import radius, value
    from pipeline.generation.repair import redraw_cells

    draft = draw_draft(TaskKey("travel", 10, 10, 60, 120, 25, 2, 0), GenerationSettings(), 0)
    assert draft.cages
    before = [(bound.radius, bound.offset) for bound in draft.bounds]
    truth = [row[:] for row in draft.truth]
    cells = [cell for cage in draft.cages for cell in cage][:3]
    redraw_cells(draft, cells)
    assert all(draft.truth[r][c] != truth[r][c] for r, c in cells)
    assert [(bound.radius, bound.offset) for bound in draft.bounds] == before
    shown = iter(draft.rules)
    for bound in draft.bounds:
        for rule in bound.rules:
            placed = next(shown)
            assert placed.name == rule.name
            if bound.window:  # the window's width is the radius in effect, the truth inside
                assert (
                    value(draft, bound) - radius(bound) <= placed.bound <= value(draft, bound) + radius(bound)
                )


def test_the_threshold_is_decided_by_the_key():
    settings_ = GenerationSettings()
    small = TaskKey("course", 10, 10, 30, 30, 25, 0, 0)
    large = TaskKey("course", 10, 10, 30, 60, 25, 0, 0)
    assert search_bits(small, settings_) < settings_.cage_bits < search_bits(large, settings_)
    assert search_bits(TaskKey("course", 5, 10, 25, 30, 35, 0, 0), settings_) < settings_.cage_bits
    assert not draw_draft(small, settings_, 0).cages
    assert draw_draft(large, settings_, 0).cages
    for bad, match in (
        (GenerationSettings(cage_bits=-1.0), "cage_bits"),
        (GenerationSettings(cage_cells=0), "cage_cells"),
    ):
        with pytest.raises(GenerationError, match=match):
            generate_task(small, bad)


@given(
    name=st.sampled_from(["toy", "course", "meal", "travel"]),
    rows=st.integers(3, 4),
    cols=st.integers(3, 4),
    hidden_share=st.floats(0.4, 0.75),
    budget=st.integers(1, 8),
    seed=st.integers(0, 10_000),
)
@settings(max_examples=40, deadline=None)
def test_caged_tasks_are_unique_by_brute_force(name, rows, cols, hidden_share, budget, seed):
    hidden = max(2, round(hidden_share * rows * cols))
    candidates = 6 if name == "toy" else budget + 2
    key = TaskKey(name, rows, cols, hidden, budget, max(candidates, budget + 2), seed, 0)
    try:
        made = generate_task(key, FORCED)
    except GenerationError:
        return  # an uncertifiable key is reported, never shipped
    truth = made.answer.truth_choice()
    assert list(enumerate_completions(made.task, limit=2)) == [truth]
    decoy_cells = sum(1 for role in made.answer.roles if role.decoys)
    assert made.task.schema_version == ("2" if decoy_cells >= 2 else "1")  # a lone cell gets no cage
    per_rule = {rule.name: distance(made.task, truth, rule.name) for rule in made.task.global_constraints}
    finite = [units for units in per_rule.values() if units is not None]
    recorded = made.answer.measures.distance_to_ambiguity
    assert recorded.units == (min(finite) if finite else None)
    assert recorded.rule is None or per_rule[recorded.rule] == recorded.units


@pytest.mark.parametrize("name", ["course", "shopping"])
def test_a_large_budget_task_certifies_and_is_deterministic(name):
    key = large_key(name)
    made = generated(key)
    assert made.answer.certificate.ok and made.answer.certificate.uniqueness == "INFEASIBLE"
    assert sum(len(role.decoys) for role in made.answer.roles) == 120
    assert any(rule.scope == Scope.CELLS for rule in made.task.global_constraints)
    assert made.task.to_dict()["schema_version"] == "2"
    again = generate_task(key)
    assert again.task.to_dict() == made.task.to_dict()
    assert again.answer.truth == made.answer.truth


def test_room_over_budget_null_keeps_k_at_every_budget():
    from pipeline.config import grid_candidates as candidates_for
    from tests.helpers_release import compose_config

    paper = compose_config(["grid=5x7"]).grid
    assert candidates_for(paper, 40) == 42 and candidates_for(paper, 10) == 25
    for preset in ("10x10", "15x15", "20x20"):
        grid = compose_config([f"grid={preset}"]).grid
        assert grid.room_over_budget is None
        assert {candidates_for(grid, budget) for budget in grid.decoy_budgets} == {25}


def test_a_search_space_beyond_int64_round_trips_through_the_answers_table():
    """A 15x15 task with 300 decoys has such a space; here the large task of this module is
    given every candidate but the truth as decoys (the table stores what the answer says)."""
    from pipeline.storage.tables import ANSWER, decode_answer, read_table, table_bytes

    answer = generated(large_key("course")).answer.to_dict()
    assert answer["measures"]["search_space"] <= 2**63 - 1
    for role in answer["roles"]:
        role["decoys"], role["filtered"] = role["decoys"] + role["filtered"], []
    space = math.prod(1 + len(role["decoys"]) for role in answer["roles"])
    answer["measures"]["search_space"] = space
    answer["measures"]["log10_search_space"] = round(math.log10(space), 6)
    assert space > 2**63 - 1
    rows = read_table(table_bytes([answer], ANSWER, "answers"))
    assert rows[0]["measures"]["search_space"] is None  # beyond int64: stored as null
    assert decode_answer(rows[0]) == answer


def test_create_dataset_keeps_k_with_room_over_budget_none():
    import gridbench

    dataset = gridbench.create_dataset(
        "course",
        size=2,
        seed=LARGE_SEEDS["course"],
        grid="10x10",
        hidden_slots=60,
        decoy_budgets=120,
        room_over_budget=None,
    )
    assert dataset.key(0).candidates_per_slot == 25
    item = dataset[0]
    assert sum(len(role["decoys"]) for role in item.answer["roles"]) == 120
    default = gridbench.create_dataset("course", size=1, grid="10x10", hidden_slots=60, decoy_budgets=120)
    assert default.key(0).candidates_per_slot == 122
    with pytest.raises(gridbench.UserError, match="room_over_budget"):
        gridbench.create_dataset("course", room_over_budget=-1)


def test_generation_time_outs_count_deterministic_work_not_the_wall_clock(monkeypatch):
    """A generation solve stops after time_limit_s units of CP-SAT's deterministic time (the
    same on every machine); the wall clock is only a backstop far above it."""
    from pipeline.generation import build
    from solvers.cpsat import CpSatModel
    from solvers.results import SolverSettings

    made = generated(large_key("course"))
    truth = made.answer.truth_choice()
    assert CpSatModel(made.task, SolverSettings(), truth).other_completion().status == "INFEASIBLE"
    assert CpSatModel(
        made.task, SolverSettings(deterministic_limit=1e-9), truth
    ).other_completion().status == ("UNKNOWN")
    with pytest.raises(GenerationError, match="UNKNOWN"):
        generate_task(
            large_key("course"),
            GenerationSettings(time_limit_s=1e-9, max_attempts=1),
        )
    seen = []
    monkeypatch.setattr(
        build, "make_unique", lambda draft, task_id, settings, solver, stats: seen.append(solver)
    )
    monkeypatch.setattr(build, "loosen_for_resistance", lambda *args: False)
    with pytest.raises(GenerationError):
        generate_task(
            TaskKey("course", 5, 7, 21, 25, 27, 0, 0), GenerationSettings(time_limit_s=2.5, max_attempts=1)
        )
    assert seen[0].deterministic_limit == 2.5 and seen[0].time_limit_s == WALL_BACKSTOP * 2.5


def test_a_draft_that_times_out_is_tried_once_more_with_a_longer_limit_then_re_drawn(monkeypatch):
    """A draft whose solve times out at the limit is the same draft tried again with
    RETRY_FACTOR times the limit (deterministic time both: the same on every machine); when
    that times out too the next draft is drawn; the task is the one the longer limit proves,
    and a draft that does not time out is never tried twice."""
    from pipeline.generation import build
    from solvers.results import RETRY_FACTOR, SolverTimeout

    key = TaskKey("course", 5, 5, 8, 5, 7, 0, 0)
    plain = generate_task(key, GenerationSettings(time_limit_s=3.0))
    real, calls = build.settle_bounds, []

    def slow_at(limits):
        def settle(draft, task_id, settings, solver, stats):
            calls.append(solver.deterministic_limit)
            if solver.deterministic_limit in limits:
                raise SolverTimeout("uniqueness solve returned UNKNOWN (time limit)")
            return real(draft, task_id, settings, solver, stats)

        return settle

    monkeypatch.setattr(build, "settle_bounds", slow_at({3.0}))
    made = generate_task(key, GenerationSettings(time_limit_s=3.0))
    assert calls == [3.0, 3.0 * RETRY_FACTOR]
    assert made.answer.certificate.attempt == 0
    assert made.task == plain.task  # the same draft: the limit decides nothing else here
    calls.clear()
    monkeypatch.setattr(build, "settle_bounds", slow_at({3.0, 3.0 * RETRY_FACTOR}))
    with pytest.raises(GenerationError, match="after 2 draws .*UNKNOWN"):
        generate_task(key, GenerationSettings(time_limit_s=3.0, max_attempts=2))
    assert calls == [3.0, 3.0 * RETRY_FACTOR] * 2
    calls.clear()
    monkeypatch.setattr(build, "settle_bounds", slow_at(set()))
    generate_task(key, GenerationSettings(time_limit_s=3.0))
    assert calls == [3.0]


def test_a_cage_gets_one_more_window_on_another_attribute_until_none_is_left():
    """Repair's last move on a caged draft (:func:`widen_cages`): each call adds one window per
    cage on a numeric attribute none of its windows uses (wide ones first), the truth inside
    it; when every cage has a window on every numeric attribute nothing is added."""
    from pipeline.generation.bounds import place, value
    from pipeline.generation.cages import widen_cages

    draft = draw_draft(TaskKey("meal", 10, 10, 60, 120, 25, 3, 0), GenerationSettings(), 0)
    numeric = [a.name for a in draft.domain.attributes if isinstance(a, NumericAttribute)]

    def windows_per_cage():
        found: dict = {}
        for bound in draft.bounds:
            rule = bound.rules[0]
            if rule.scope == Scope.CELLS:
                found.setdefault(tuple(rule.cells), []).append(rule.attribute)
        return found

    assert all(len(attrs) == 1 for attrs in windows_per_cage().values())
    for count in range(2, len(numeric) + 1):
        assert widen_cages(draft, GenerationSettings())
        place(draft)
        per_cage = windows_per_cage()
        assert set(per_cage) == set(draft.cages)
        assert all(len(attrs) == count == len(set(attrs)) for attrs in per_cage.values())
    assert not widen_cages(draft, GenerationSettings())
    names = [rule.name for rule in draft.rules]
    assert len(names) == len(set(names))
    shown = {rule.name: rule.bound for rule in draft.rules}
    for bound in draft.bounds:
        if bound.window:
            side = {rule.kind: shown[rule.name] for rule in bound.rules}
            assert side[RuleKind.SUM_MIN] <= value(draft, bound) <= side[RuleKind.SUM_MAX]


def test_a_caged_draft_whose_repair_runs_out_is_widened_and_certified(monkeypatch):
    """When the rounds run out on a caged draft, the cages get a second window and repair goes
    on: the task certifies (unique by CP-SAT) in the same draw, not a re-drawn one."""
    from pipeline.generation import build
    from pipeline.generation.repair import RepairFailed

    calls = []
    real = build.make_unique

    def first_fails(draft, *args):
        calls.append(len(draft.bounds))
        if len(calls) == 1:
            raise RepairFailed("planted: the rounds ran out")
        return real(draft, *args)

    monkeypatch.setattr(build, "make_unique", first_fails)
    made = generate_task(TaskKey("course", 10, 10, 30, 60, 25, 0, 0))
    cages = {rule.cells for rule in made.task.global_constraints if rule.scope == Scope.CELLS}
    per_cage = Counter(
        rule.cells
        for rule in made.task.global_constraints
        if rule.kind == RuleKind.SUM_MIN and rule.scope == Scope.CELLS
    )
    assert made.answer.certificate.attempt == 0 and made.answer.certificate.ok
    assert calls[1] > calls[0] and set(per_cage.values()) == {2} and len(per_cage) == len(cages)
