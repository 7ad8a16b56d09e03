"""Repair, step by step, on small toy drafts: how far one tightening narrows a radius, which
bound it picks, what a redrawn cell keeps, the margin, and how the rounds are counted and
bounded. Repair works on the *virtual* task (every bound symmetric around the truth:
pipeline/generation/bounds.py); the shown task, inside it, follows."""

from __future__ import annotations

import pytest

from pipeline.generation import GenerationSettings, TaskKey
from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.bounds import place, radius, separation, value
from pipeline.generation.build import draw_draft
from pipeline.generation.repair import (
    RepairFailed,
    RepairStats,
    make_unique,
    redraw_cells,
    round_budget,
    tighten,
    virtual_task,
)
from solvers.checker import is_valid_completion
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings

SOLVER = SolverSettings(time_limit_s=20.0)


def _draft(seed: int = 3):
    return draw_draft(TaskKey("toy", 3, 3, 4, 6, 5, seed=seed), GenerationSettings(), 0)


def _shown(draft):
    order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
    return build_task(draft, "t", 0, 0, order=order)


def _virtual_model(draft):
    return CpSatModel(virtual_task(draft, "t"), SOLVER, truth_choice(draft))


def _loosened(draft) -> None:
    for bound in draft.bounds:
        bound.radius = 10_000
    place(draft)


def _grid(draft, choice):
    grid = [list(row) for row in draft.truth]
    for (row, col), item_id in choice.items():
        grid[row][col] = item_id
    return grid


@pytest.mark.parametrize("margin", [1, 2, 3])
def test_one_tightening_narrows_one_radius_just_past_the_counterexample(margin):
    draft = _draft()
    _loosened(draft)
    other = _virtual_model(draft).other_completion()
    assert other.status == FEASIBLE
    before = [radius(bound) for bound in draft.bounds]
    index = tighten(draft, other.solution, margin)
    assert index is not None
    after = [radius(bound) for bound in draft.bounds]
    assert [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a] == [index]
    bound = draft.bounds[index]
    truth, seen = value(draft, bound), value(draft, bound, _grid(draft, other.solution))
    gap = abs(seen - truth) if bound.window else (seen - truth if bound.upper else truth - seen)
    assert gap > 0 and after[index] == max(0, gap - margin) < gap


@pytest.mark.parametrize("seed", [0, 3, 5])
@pytest.mark.parametrize("margin", [1, 2])
def test_a_bound_already_narrowed_past_the_counterexample_is_never_the_one_picked(seed, margin):
    """A window whose radius already keeps the counterexample out (with the margin) cannot
    exclude it further: narrowing it "again" changes nothing and repair would find the same
    counterexample round after round. Tightening narrows another bound, strictly."""
    draft = _draft(seed)
    _loosened(draft)
    other = _virtual_model(draft).other_completion()
    assert other.status == FEASIBLE
    grid = _grid(draft, other.solution)
    widths = {i: separation(draft, bound, grid, margin) for i, bound in enumerate(draft.bounds)}
    windows = [i for i, width in widths.items() if width is not None and draft.bounds[i].window]
    if len(windows) < 2:
        pytest.skip("needs two windows that can exclude the counterexample")
    settled = windows[0]
    draft.bounds[settled].radius = widths[settled]
    place(draft)
    assert radius(draft.bounds[settled]) == widths[settled]
    before = [radius(bound) for bound in draft.bounds]
    index = tighten(draft, other.solution, margin)
    assert index is not None and index != settled
    assert radius(draft.bounds[index]) < before[index]


def test_only_windows_are_narrowed_and_a_counterexample_only_a_one_sided_bound_cuts_is_re_drawn():
    """Narrowing a one-sided bound selects truths better than their decoys in its direction (a
    tell: 10x10 travel's truths were museums and outdoor activities too often), so repair
    narrows windows only; a counterexample that no window can cut, even one a one-sided bound
    could, gets None (its cells are re-drawn)."""
    only_one_sided = 0
    for seed in range(30):
        draft = _draft(seed)
        _loosened(draft)
        other = _virtual_model(draft).other_completion()
        grid = _grid(draft, other.solution)
        windows_can = any(
            bound.window and value(draft, bound, grid) != value(draft, bound) for bound in draft.bounds
        )
        one_sided_can = any(
            not bound.window and separation(draft, bound, grid, 1) is not None for bound in draft.bounds
        )
        radii = [bound.radius for bound in draft.bounds]
        index = tighten(draft, other.solution, 1)
        if windows_can:
            assert draft.bounds[index].window
        else:
            assert index is None and [bound.radius for bound in draft.bounds] == radii
            only_one_sided += one_sided_can
    assert only_one_sided > 0  # the case the rule is about occurs among these drafts


def test_no_tightening_separates_the_truth_from_itself():
    draft = _draft()
    before = [bound.radius for bound in draft.bounds]
    assert tighten(draft, truth_choice(draft), 1) is None
    assert [bound.radius for bound in draft.bounds] == before


def test_a_cell_without_decoys_is_redrawn_too():
    draft = _draft()
    cell = next(c for c in draft.hidden if not draft.decoys.get(c))
    old = draft.truth[cell[0]][cell[1]]
    redraw_cells(draft, [cell])
    assert draft.truth[cell[0]][cell[1]] != old and old not in draft.items
    assert not draft.decoys.get(cell)


def test_a_redrawn_cell_gets_all_new_candidates_and_the_bounds_follow_the_truth():
    draft = _draft()
    cell = next(c for c in draft.hidden if draft.decoys.get(c))
    old = [draft.truth[cell[0]][cell[1]], *draft.decoys[cell]]
    others = {c: (draft.truth[c[0]][c[1]], list(draft.decoys.get(c, []))) for c in draft.hidden if c != cell}
    radii = [(bound.radius, bound.offset) for bound in draft.bounds]
    redraw_cells(draft, [cell])
    new = [draft.truth[cell[0]][cell[1]], *draft.decoys[cell]]
    assert len(new) == len(old) and not set(new) & set(old)
    assert not any(item_id in draft.items for item_id in old)
    assert {c: (draft.truth[c[0]][c[1]], list(draft.decoys.get(c, []))) for c in others} == others
    assert [(bound.radius, bound.offset) for bound in draft.bounds] == radii
    assert is_valid_completion(_shown(draft), truth_choice(draft))  # the new truth meets every rule


def test_repair_counts_its_rounds_and_keeps_the_counterexamples():
    draft = _draft()
    _loosened(draft)
    stats = RepairStats()
    make_unique(draft, "t", GenerationSettings(), SOLVER, stats)
    assert stats.rounds >= 1 and stats.rounds == len(stats.counterexamples)
    assert stats.rounds >= stats.tightenings and (stats.rounds > stats.tightenings) == (
        stats.cell_redraws > 0
    )
    assert _virtual_model(draft).other_completion().status == INFEASIBLE
    truth = truth_choice(draft)
    shown = _shown(draft)
    assert CpSatModel(shown, SOLVER, truth).other_completion().status == INFEASIBLE  # inside the virtual
    assert all(isinstance(example, dict) and set(example) == set(truth) for example in stats.counterexamples)
    assert all(example != truth for example in stats.counterexamples)


def test_repair_gives_up_after_its_rounds(monkeypatch):
    """A counterexample nothing removes (no bound narrows, a redraw changes nothing) ends the
    repair after exactly its budget of rounds."""
    from pipeline.generation import repair

    draft = _draft()
    _loosened(draft)
    budget = round_budget(draft, GenerationSettings(max_repair_rounds=0))
    assert budget == 2 * len(draft.bounds)
    monkeypatch.setattr(repair, "tighten", lambda *args: None)
    monkeypatch.setattr(repair, "redraw_cells", lambda *args: None)
    stats = RepairStats()
    with pytest.raises(RepairFailed, match=f"after {budget} repair rounds"):
        make_unique(draft, "t", GenerationSettings(max_repair_rounds=0), SOLVER, stats)
    assert stats.rounds == budget == len(stats.counterexamples)


def test_the_round_budget_grows_with_the_bounds():
    settings = GenerationSettings(max_repair_rounds=7)
    small = _draft()
    large = draw_draft(TaskKey("course", 10, 10, 60, 120, 25, seed=1), GenerationSettings(), 0)
    assert round_budget(small, settings) == 7 + 2 * len(small.bounds)
    assert round_budget(large, settings) == 7 + 2 * len(large.bounds) > round_budget(small, settings)


@pytest.mark.parametrize("seed", [0, 3, 5])
@pytest.mark.parametrize("margin", [2, 3])
def test_a_margin_leaves_room_on_every_shown_bound(seed, margin):
    """With min_margin m, loosening any one shown bound by m - 1 keeps the task unique (the
    virtual task has that room, and every shown bound lies inside its virtual one)."""
    draft = _draft(seed)
    try:
        make_unique(draft, "t", GenerationSettings(min_margin=margin), SOLVER, RepairStats())
    except RepairFailed:
        return  # the draft is re-drawn by the caller
    least = CpSatModel(_shown(draft), SOLVER, truth_choice(draft)).least_loosening_to_ambiguity()
    assert least.status == INFEASIBLE or least.objective >= margin


def test_a_repair_solve_that_times_out_is_never_taken_for_uniqueness():
    from solvers.results import SolverTimeout

    stats = RepairStats()
    with pytest.raises(SolverTimeout, match="uniqueness solve returned UNKNOWN"):
        make_unique(_draft(), "t", GenerationSettings(), SolverSettings(time_limit_s=1e-9), stats)
    assert stats.rounds == 0


def test_a_margin_solve_that_times_out_is_never_taken_for_room(monkeypatch):
    """Uniqueness is proved; the margin question (the least loosening of one bound that lets a
    second completion through) times out: repair stops with a time-out and never accepts the
    draft as having the room it was asked for."""
    from solvers.results import UNKNOWN, SolveResult, SolverTimeout

    monkeypatch.setattr(CpSatModel, "least_loosening_to_ambiguity", lambda self: SolveResult(UNKNOWN, 1.0))
    stats = RepairStats()
    with pytest.raises(SolverTimeout, match="margin"):
        make_unique(_draft(), "t", GenerationSettings(min_margin=2), SOLVER, stats)


@pytest.mark.parametrize(("margin", "narrowed"), [(1, False), (2, False), (3, True)])
def test_room_of_exactly_the_margin_is_enough(margin, narrowed):
    """min_margin m asks for m - 1 units of room: a task whose least loosening to ambiguity is
    exactly 2 units has the room margin 2 asks for (no counterexample, nothing narrowed), and
    not the room margin 3 asks for (the second completion that 2 units let through)."""
    from pipeline.generation.repair import _margin_counterexample
    from tests.examples import LOWER_LOOSENING

    model = CpSatModel(LOWER_LOOSENING, SOLVER, {(0, 0): "a0", (0, 1): "b0"})
    assert model.least_loosening_to_ambiguity().objective == 2
    found = _margin_counterexample(model, margin)
    assert (found is not None) == narrowed
    if narrowed:
        assert found != {(0, 0): "a0", (0, 1): "b0"}


def test_a_draft_made_unique_in_its_last_allowed_round_is_kept(monkeypatch):
    """The budget counts narrowing rounds and the uniqueness check after the last one still
    runs: a draft that needs exactly its budget is kept, one round fewer gives up."""
    from pipeline.generation import repair

    draft = _draft()
    _loosened(draft)
    stats = RepairStats()
    make_unique(draft, "t", GenerationSettings(), SOLVER, stats)
    needed = stats.rounds
    assert needed >= 2
    monkeypatch.setattr(repair, "round_budget", lambda *args: needed)
    draft = _draft()
    _loosened(draft)
    make_unique(draft, "t", GenerationSettings(), SOLVER, RepairStats())
    assert _virtual_model(draft).other_completion().status == INFEASIBLE
    monkeypatch.setattr(repair, "round_budget", lambda *args: needed - 1)
    draft = _draft()
    _loosened(draft)
    with pytest.raises(RepairFailed, match=f"after {needed - 1} repair rounds"):
        make_unique(draft, "t", GenerationSettings(), SOLVER, RepairStats())


def test_a_small_draft_takes_the_cut_that_keeps_most_of_a_radius_and_a_caged_one_the_deepest():
    from pipeline.generation.repair import _deepest_cut, _least_cut

    draft = _draft()
    for bound in draft.bounds:
        bound.radius = 40
    place(draft)
    radii = [radius(bound) for bound in draft.bounds]
    first, second = sorted(range(len(radii)), key=lambda i: -radii[i])[:2]
    assert radii[first] >= 4 and radii[second] >= 4
    candidates = [(first, 1), (second, radii[second] - 1)]  # keeps 2 of R + 1 units against R of R + 1
    assert _least_cut(draft, candidates) == (second, radii[second] - 1)
    assert _deepest_cut(draft, candidates) == (first, 1)


def test_the_cut_kept_is_the_share_of_its_radius_exactly_and_ties_are_drawn_at_random():
    """``_least_cut`` keeps the largest share (w + 1) / (R + 1) of a radius, ``_deepest_cut``
    the smallest, over every pair of radii and widths of two bounds (an off-by-one in either
    share flips some pair); equal shares are drawn at random, each one sometimes."""
    from fractions import Fraction

    from pipeline.generation.repair import _deepest_cut, _least_cut

    draft = _draft()
    windows = [i for i, bound in enumerate(draft.bounds) if bound.window]
    assert len(windows) >= 2
    a, b = windows[:2]
    for big in range(2, 8):
        for small in range(1, big):
            draft.bounds[a].radius, draft.bounds[b].radius = big, small
            place(draft)
            assert (radius(draft.bounds[a]), radius(draft.bounds[b])) == (big, small)
            for wa in range(big):
                for wb in range(small):
                    share = {a: Fraction(wa + 1, big + 1), b: Fraction(wb + 1, small + 1)}
                    candidates = [(a, wa), (b, wb)]
                    if share[a] == share[b]:
                        continue
                    most, least = (a, b) if share[a] > share[b] else (b, a)
                    assert _least_cut(draft, candidates)[0] == most, (big, small, wa, wb)
                    assert _deepest_cut(draft, candidates)[0] == least, (big, small, wa, wb)
    draft.bounds[a].radius, draft.bounds[b].radius = 5, 2
    place(draft)
    tied = [(a, 1), (b, 0)]  # 2/6 and 1/3
    for pick in (_least_cut, _deepest_cut):
        assert {pick(draft, tied)[0] for _ in range(60)} == {a, b}


@pytest.mark.parametrize("caged", [False, True])
def test_a_small_draft_is_cut_least_and_a_caged_one_deepest(caged, monkeypatch):
    """tighten hands every window that can exclude the counterexample to ``_least_cut`` (a
    small draft) or ``_deepest_cut`` (a caged one), and narrows the one it picks."""
    from pipeline.generation import repair

    draft = _draft()
    _loosened(draft)
    other = _virtual_model(draft).other_completion()
    assert other.status == FEASIBLE
    asked = []
    for name in ("_least_cut", "_deepest_cut"):
        real = getattr(repair, name)
        monkeypatch.setattr(
            repair,
            name,
            lambda d, found, _name=name, _real=real: asked.append((_name, found)) or _real(d, found),
        )
    if caged:
        monkeypatch.setattr(draft, "cages", [[(0, 0)]])
    index = tighten(draft, other.solution, 1)
    [(name, found)] = asked
    assert name == ("_deepest_cut" if caged else "_least_cut")
    assert index in [i for i, _ in found] and len(found) >= 1


def test_a_one_sided_bound_listed_first_does_not_hide_the_windows_after_it():
    draft = _draft()
    _loosened(draft)
    other = _virtual_model(draft).other_completion()
    assert other.status == FEASIBLE
    one_sided = [i for i, bound in enumerate(draft.bounds) if not bound.window]
    assert one_sided, "the toy draft has a one-sided bound"
    draft.bounds.insert(0, draft.bounds.pop(one_sided[-1]))
    place(draft)
    grid = _grid(draft, other.solution)
    cutting = [
        i for i, b in enumerate(draft.bounds) if b.window and separation(draft, b, grid, 1) is not None
    ]
    assert cutting, "some window separates the counterexample"
    index = tighten(draft, other.solution, 1)
    assert index in cutting


def test_repair_counts_every_re_drawn_cell_over_its_rounds(monkeypatch):
    """With no window able to cut (tighten answers None), every round re-draws the cells its
    counterexample changed; the stats count all of them, round after round."""
    from pipeline.generation import repair

    drawn = []
    monkeypatch.setattr(repair, "tighten", lambda *args, **kwargs: None)
    real = repair.redraw_cells
    monkeypatch.setattr(
        repair, "redraw_cells", lambda draft, cells: drawn.append(len(cells)) or real(draft, cells)
    )
    monkeypatch.setattr(repair, "round_budget", lambda *args: 3)
    draft = _draft()
    _loosened(draft)
    stats = RepairStats()
    try:
        make_unique(draft, "t", GenerationSettings(), SOLVER, stats)
    except RepairFailed:
        pass
    assert len(drawn) >= 2 and all(drawn), drawn
    assert stats.cell_redraws == sum(drawn)
