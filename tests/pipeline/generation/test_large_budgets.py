"""Large decoy budgets: even hidden cells, balanced rows, extra windows (issue 12).

With many exchangeable decoys the domain's few grid sums let combinations of swaps cancel, so
above ``balance_bits`` the generator spreads the hidden cells evenly, gives every row the same
total of each numeric attribute by changing visible cells only, and states row windows; repair
adds extra windows (grid sums, category counts) when stuck. These tests check each piece on
its own, the whole against brute-force enumeration on small grids (balancing forced with
``balance_bits=0``), and that keys below the threshold are drawn exactly as before.
"""

from __future__ import annotations

import copy
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import NumericAttribute, domain_names, get_domain
from gridbench.vocabulary import RuleKind, Scope
from pipeline.generation import repair
from pipeline.generation.build import draw_draft, generate_task
from pipeline.generation.constrain import balance_rows, extra_windows, rule_templates, truth_measures
from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey
from pipeline.generation.sample import spread_cells
from pipeline.generation.validate import search_bits
from solvers.checker import enumerate_completions, rule_groups, rule_measure
from tests.brute import distance

FORCED = GenerationSettings(balance_bits=0.0)


@given(
    rows=st.integers(1, 12),
    cols=st.integers(1, 12),
    share=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=200, deadline=None)
def test_spread_cells_are_even_over_rows_and_columns(rows, cols, share, seed):
    count = round(share * rows * cols)
    cells = spread_cells(rows, cols, count, random.Random(seed))
    assert len(cells) == len(set(cells)) == count
    assert all(0 <= r < rows and 0 <= c < cols for r, c in cells)
    per_row = Counter(r for r, _ in cells)
    per_col = Counter(c for _, c in cells)
    assert max(per_row[r] for r in range(rows)) - min(per_row[r] for r in range(rows)) <= 1
    assert max(per_col[c] for c in range(cols)) - min(per_col[c] for c in range(cols)) <= 1
    assert cells == sorted(cells)


@pytest.mark.parametrize("name", sorted(domain_names()))
def test_extra_windows_are_new_well_formed_pairs(name):
    domain = get_domain(name)
    own = rule_templates(domain.global_rules)
    pairs = extra_windows(domain)
    assert pairs, name
    names = [t.name for pair in pairs for t in pair]
    assert len(set(names)) == len(names)
    assert not set(names) & {t.name for t in own}
    stated = {(t.attribute, t.kind, t.equals) for t in own if t.scope == Scope.GRID}
    for pair in pairs:
        assert len({(t.attribute, t.equals) for t in pair}) == 1
        assert all(t.scope == Scope.GRID for t in pair)
        assert all((t.attribute, t.kind, t.equals) not in stated for t in pair)
        kinds = {t.kind for t in pair}
        assert kinds <= {RuleKind.SUM_MIN, RuleKind.SUM_MAX} or kinds <= {
            RuleKind.COUNT_MIN,
            RuleKind.COUNT_MAX,
        }


def test_the_threshold_is_decided_by_the_key_and_leaves_small_budgets_alone():
    small = TaskKey("course", 5, 7, 21, 25, 27, 0, 0)
    large = TaskKey("course", 10, 10, 60, 120, 25, 0, 0)
    settings_ = GenerationSettings()
    assert search_bits(small, settings_) < settings_.balance_bits < search_bits(large, settings_)
    assert search_bits(TaskKey("course", 5, 10, 25, 30, 35, 0, 0), settings_) < settings_.balance_bits
    assert not draw_draft(small, settings_, 0).balanced
    draft = draw_draft(large, settings_, 0)
    assert draft.balanced
    per_row = Counter(r for r, _ in draft.hidden)
    assert max(per_row.values()) - min(per_row[r] for r in range(10)) <= 1
    assert any("_per_day_" in rule.name for rule in draft.rules)
    with pytest.raises(GenerationError, match="balance_bits"):
        generate_task(small, GenerationSettings(balance_bits=-1.0))


@pytest.mark.parametrize("name", ["course", "meal", "travel", "workforce"])
@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_rows_touch_only_visible_cells_and_stay_in_range(name, seed):
    draft = draw_draft(TaskKey(name, 10, 10, 60, 120, 25, seed, 0), GenerationSettings(), 0)
    hidden = set(draft.hidden)
    before = copy.deepcopy(draft.items)
    visible = {draft.truth[r][c] for r, c in draft.cells() if (r, c) not in hidden}
    balanced = 0
    for attribute in draft.balanced:
        numeric = draft.domain.numeric(attribute)
        pair = balance_rows(draft, attribute)
        totals = {
            sum(int(draft.truth_record((r, c))[attribute]) for c in range(draft.cols))
            for r in range(draft.rows)
        }
        if pair is None:
            continue
        balanced += 1
        assert len(totals) == 1, (attribute, totals)
        assert [t.scope for t in pair] == [Scope.ROW, Scope.ROW]
        assert {t.kind for t in pair} == {RuleKind.SUM_MIN, RuleKind.SUM_MAX}
        for item_id in visible:
            assert numeric.low <= int(draft.items[item_id][attribute]) <= numeric.high
    assert balanced >= 2, name
    for item_id, record in draft.items.items():
        if item_id not in visible:  # hidden truths, decoys: never changed
            assert record == before[item_id]


def test_rows_that_cannot_reach_one_total_are_left_unchanged():
    # every cell hidden: no visible cell can move, so rows with different totals fail
    draft = draw_draft(TaskKey("course", 4, 4, 16, 0, 25, 3, 0), GenerationSettings(), 0)
    before = copy.deepcopy(draft.items)
    results = {}
    for attribute in ("credits", "price"):
        totals = {
            sum(int(draft.truth_record((r, c))[attribute]) for c in range(draft.cols))
            for r in range(draft.rows)
        }
        results[attribute] = (balance_rows(draft, attribute), len(totals))
    assert any(total > 1 for _, total in results.values())
    for pair, totals in results.values():
        assert (pair is None) == (totals > 1)
    assert draft.items == before


def test_a_stuck_repair_adds_every_window_that_separates_the_counterexample():
    key = TaskKey("course", 10, 10, 60, 120, 25, 0, 0)
    draft = draw_draft(key, GenerationSettings(), 0)
    cell = next(c for c in draft.hidden if draft.decoys.get(c))
    truth = draft.truth[cell[0]][cell[1]]
    decoy = next(
        d for d in draft.decoys[cell] if draft.items[d]["category"] != draft.items[truth]["category"]
    )
    counterexample = {c: draft.truth[c[0]][c[1]] for c in draft.hidden} | {cell: decoy}
    rules_before = len(draft.rules)
    assert repair._add_window(draft, counterexample, GenerationSettings())
    added = draft.rules[rules_before:]
    names = {rule.name for rule in added}
    for value in (draft.items[truth]["category"], draft.items[decoy]["category"]):
        assert {f"category_{value}_min", f"category_{value}_max"} <= names
    grid = [list(row) for row in draft.truth]
    grid[cell[0]][cell[1]] = decoy
    for rule in added:
        truth_measure = truth_measures(draft, rule)[0]
        assert (truth_measure <= rule.bound) if rule.is_upper_bound else (truth_measure >= rule.bound)
        group = rule_groups(rule, draft.rows, draft.cols)[0]
        other = rule_measure(rule, [draft.items[grid[r][c]] for r, c in group])
        assert other != truth_measure  # every added window separates the counterexample
    # the windows stay with the draft when rules are drawn again
    assert [t.name for t in draft.extra] == [rule.name for rule in added]
    assert not repair._add_window(
        draft, {c: draft.truth[c[0]][c[1]] for c in draft.hidden}, GenerationSettings()
    )


@given(
    name=st.sampled_from(["toy", "course", "meal"]),
    rows=st.integers(3, 4),
    cols=st.integers(3, 4),
    hidden_share=st.floats(0.4, 0.75),
    budget=st.integers(1, 8),
    seed=st.integers(0, 10_000),
)
@settings(max_examples=40, deadline=None)
def test_balanced_tasks_are_unique_by_brute_force(name, rows, cols, hidden_share, budget, seed):
    hidden = max(2, round(hidden_share * rows * cols))
    candidates = 6 if name == "toy" else budget + 2
    key = TaskKey(name, rows, cols, hidden, budget, max(candidates, budget + 2), seed, 0)
    try:
        made = generate_task(key, FORCED)
    except GenerationError:
        return  # an uncertifiable key is reported, never shipped
    truth = made.answer.truth_choice()
    assert list(enumerate_completions(made.task, limit=2)) == [truth]
    # the measured distance (settled by repair's counterexamples or by CP-SAT) is the brute-force one
    per_rule = {rule.name: distance(made.task, truth, rule.name) for rule in made.task.global_constraints}
    finite = [units for units in per_rule.values() if units is not None]
    recorded = made.answer.measures.distance_to_ambiguity
    assert recorded.units == (min(finite) if finite else None)
    assert recorded.rule is None or per_rule[recorded.rule] == recorded.units
    for rule in made.task.global_constraints:
        if (
            rule.scope == Scope.ROW
            and rule.kind in (RuleKind.SUM_MIN, RuleKind.SUM_MAX)
            and "_per_" in rule.name
        ):
            grid = [[made.answer.truth[r][c] for c in range(cols)] for r in range(rows)]
            totals = {
                rule_measure(rule, [made.task.items[grid[r][c]] for r, c in group])
                for group in rule_groups(rule, rows, cols)
            }
            assert len(totals) == 1, (rule.name, totals)


@pytest.mark.parametrize("name", ["course", "shopping"])
def test_a_large_budget_task_certifies_and_is_deterministic(name):
    key = TaskKey(name, 10, 10, 60, 120, 25, 1, 0)
    made = generate_task(key)
    assert made.answer.certificate.ok and made.answer.certificate.uniqueness == "INFEASIBLE"
    assert sum(len(role.decoys) for role in made.answer.roles) == 120
    assert any(rule.scope == Scope.ROW and "_per_" in rule.name for rule in made.task.global_constraints)
    again = generate_task(key)
    assert again.task.to_dict() == made.task.to_dict()
    assert again.answer.truth == made.answer.truth


def test_balanced_attributes_are_the_numeric_ones():
    draft = draw_draft(TaskKey("travel", 10, 10, 60, 120, 25, 0, 0), GenerationSettings(), 0)
    assert draft.balanced == [a.name for a in draft.domain.attributes if isinstance(a, NumericAttribute)]


def test_room_over_budget_null_keeps_k_at_every_budget():
    from pipeline.config import candidates_for
    from tests.helpers_release import compose_config

    paper = compose_config(["grid=5x7"]).grid
    assert candidates_for(paper, 40) == 42 and candidates_for(paper, 10) == 25
    for preset in ("10x10", "15x15", "20x20"):
        grid = compose_config([f"grid={preset}"]).grid
        assert grid.room_over_budget is None
        assert {candidates_for(grid, budget) for budget in grid.decoy_budgets} == {25}


def test_a_search_space_beyond_int64_round_trips_through_the_answers_table():
    from pipeline.storage.tables import ANSWER, decode_answer, read_table, table_bytes

    made = generate_task(TaskKey("course", 15, 15, 150, 300, 25, 0, 0))
    answer = made.answer.to_dict()
    assert answer["measures"]["search_space"] > 2**63 - 1
    rows = read_table(table_bytes([answer], ANSWER, "answers"))
    assert rows[0]["measures"]["search_space"] is None  # beyond int64: stored as null
    assert decode_answer(rows[0]) == answer


def test_create_dataset_keeps_k_with_room_over_budget_none():
    import gridbench

    dataset = gridbench.create_dataset(
        "course", size=2, grid="10x10", hidden_slots=60, decoy_budgets=120, room_over_budget=None
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

    made = generate_task(TaskKey("course", 10, 10, 60, 120, 25, 0, 0))
    truth = made.answer.truth_choice()
    assert CpSatModel(made.task, SolverSettings(), truth).other_completion().status == "INFEASIBLE"
    assert CpSatModel(
        made.task, SolverSettings(deterministic_limit=1e-9), truth
    ).other_completion().status == ("UNKNOWN")
    with pytest.raises(GenerationError, match="UNKNOWN"):
        generate_task(
            TaskKey("course", 10, 10, 60, 120, 25, 0, 0),
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
    assert seen[0].deterministic_limit == 2.5 and seen[0].time_limit_s == build.WALL_BACKSTOP * 2.5
