"""Repair, step by step, on small toy drafts: how far one tightening moves a bound, what a
redrawn cell keeps, the margin, and how the rounds are counted and bounded."""

from __future__ import annotations

import pytest

from pipeline.generation import GenerationSettings, TaskKey
from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.build import draw_draft
from pipeline.generation.constrain import truth_measures
from pipeline.generation.repair import RepairFailed, RepairStats, _tighten, make_unique, redraw_cells
from solvers.checker import rule_groups, rule_measure
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings

SOLVER = SolverSettings(time_limit_s=20.0)
KEY = TaskKey("toy", 3, 3, 4, 6, 5, seed=3)


def _draft(seed: int = 3):
    return draw_draft(TaskKey("toy", 3, 3, 4, 6, 5, seed=seed), GenerationSettings(), 0)


def _model(draft):
    order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
    return CpSatModel(build_task(draft, "t", 0, 0, order=order), SOLVER, truth_choice(draft))


def _loosened(draft) -> None:
    for index, rule in enumerate(draft.rules):
        draft.rules[index] = rule.with_bound(rule.bound * 3 + 50 if rule.is_upper_bound else 0)


def _measures(draft, rule, choice) -> list[int]:
    grid = [list(row) for row in draft.truth]
    for (row, col), item_id in choice.items():
        grid[row][col] = item_id
    return [
        rule_measure(rule, [draft.items[grid[r][c]] for r, c in group])
        for group in rule_groups(rule, draft.rows, draft.cols)
    ]


@pytest.mark.parametrize("margin", [1, 2, 3])
def test_one_tightening_moves_one_bound_just_past_the_counterexample(margin):
    draft = _draft()
    _loosened(draft)
    other = _model(draft).other_completion()
    assert other.status == FEASIBLE
    before = list(draft.rules)
    assert _tighten(draft, other.solution, margin)
    changed = [(old, new) for old, new in zip(before, draft.rules, strict=True) if old != new]
    assert len(changed) == 1
    old, new = changed[0]
    truth, seen = truth_measures(draft, new), _measures(draft, new, other.solution)
    if new.is_upper_bound:
        assert new.bound == max(max(truth), max(seen) - margin) and max(seen) > new.bound >= max(truth)
    else:
        assert new.bound == min(min(truth), min(seen) + margin) and min(seen) < new.bound <= min(truth)
    assert (new.name, new.kind, new.attribute, new.scope) == (old.name, old.kind, old.attribute, old.scope)


def test_no_tightening_separates_the_truth_from_itself():
    draft = _draft()
    before = list(draft.rules)
    assert not _tighten(draft, truth_choice(draft), 1)
    assert draft.rules == before


def test_a_cell_without_decoys_is_redrawn_too():
    draft = _draft()
    cell = next(c for c in draft.hidden if not draft.decoys.get(c))
    old = draft.truth[cell[0]][cell[1]]
    redraw_cells(draft, [cell], GenerationSettings())
    assert draft.truth[cell[0]][cell[1]] != old and old not in draft.items
    assert not draft.decoys.get(cell)


def test_a_redrawn_cell_gets_all_new_candidates_and_keeps_its_share():
    draft = _draft()
    cell = next(c for c in draft.hidden if draft.decoys.get(c))
    old = [draft.truth[cell[0]][cell[1]], *draft.decoys[cell]]
    others = {c: (draft.truth[c[0]][c[1]], list(draft.decoys.get(c, []))) for c in draft.hidden if c != cell}
    redraw_cells(draft, [cell], GenerationSettings())
    new = [draft.truth[cell[0]][cell[1]], *draft.decoys[cell]]
    assert len(new) == len(old) and not set(new) & set(old)
    assert not any(item_id in draft.items for item_id in old)
    assert {c: (draft.truth[c[0]][c[1]], list(draft.decoys.get(c, []))) for c in others} == others
    for rule in draft.rules:  # the rules are drawn again from the new truth grid, which meets them
        measures = truth_measures(draft, rule)
        assert max(measures) <= rule.bound if rule.is_upper_bound else min(measures) >= rule.bound


def test_repair_counts_its_rounds_and_keeps_the_counterexamples():
    draft = _draft()
    _loosened(draft)
    stats = RepairStats()
    make_unique(draft, "t", GenerationSettings(), SOLVER, stats)
    assert stats.rounds >= 1 and stats.rounds == len(stats.counterexamples)
    assert stats.rounds == stats.tightenings + (stats.cell_redraws > 0)  # toy drafts: no windows
    assert _model(draft).other_completion().status == INFEASIBLE
    truth = truth_choice(draft)
    assert all(isinstance(example, dict) and set(example) == set(truth) for example in stats.counterexamples)
    assert all(example != truth for example in stats.counterexamples)


def test_repair_gives_up_after_its_rounds():
    draft = _draft()
    _loosened(draft)
    stats = RepairStats()
    with pytest.raises(RepairFailed, match="after 0 repair rounds"):
        make_unique(draft, "t", GenerationSettings(max_repair_rounds=0), SOLVER, stats)
    assert stats.rounds == 0 and stats.counterexamples == []
    stats = RepairStats()
    with pytest.raises(RepairFailed, match="after 1 repair rounds"):
        make_unique(_loosened_draft(), "t", GenerationSettings(max_repair_rounds=1), SOLVER, stats)
    assert stats.rounds == 1


def _loosened_draft():
    draft = _draft()
    _loosened(draft)
    _loosened(draft)
    return draft


def test_a_margin_is_checked_by_the_least_loosening():
    """Seed 3's repaired draft needs a loosening of exactly 3 to admit a second completion:
    min_margin 3 is met as it is, 4 is not (and tightening cannot push the truth's own slack:
    the draft fails, to be re-drawn). Seed 0's needs 1: min_margin 2 fails on it."""
    draft = _draft(seed=3)
    make_unique(draft, "t", GenerationSettings(min_margin=3), SOLVER, stats := RepairStats())
    assert stats.rounds == 0 and _model(draft).least_loosening_to_ambiguity().objective == 3
    for seed, margin in ((3, 4), (0, 2)):
        stats = RepairStats()
        with pytest.raises(RepairFailed):
            make_unique(_draft(seed=seed), "t", GenerationSettings(min_margin=margin), SOLVER, stats)
        assert stats.counterexamples and all(
            set(c) == set(truth_choice(_draft(seed))) for c in stats.counterexamples
        )


def test_a_repair_solve_that_times_out_is_never_taken_for_uniqueness():
    from solvers.results import SolverTimeout

    stats = RepairStats()
    with pytest.raises(SolverTimeout, match="uniqueness solve returned UNKNOWN"):
        make_unique(_draft(), "t", GenerationSettings(), SolverSettings(time_limit_s=1e-9), stats)
    assert stats.rounds == 0
