"""Difficulty measures against simple references, and repair of non-unique drafts."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given

from domains import get_domain
from pipeline import GenerationSettings, TaskKey, generate_task
from pipeline.assemble import build_task, candidate_ids
from pipeline.build import _draft_decoys
from pipeline.constrain import draw_global_rules
from pipeline.draft import Draft
from pipeline.measures import CanonicalSearch, search_space, shallow_decoys
from pipeline.repair import RepairStats, make_unique
from pipeline.sample import sample_grid
from solvers.checker import VIOLATED, check_global, locally_valid_candidates
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings
from tests.brute import completions
from tests.strategies import small_tasks


def naive_dfs_nodes(task) -> tuple[int, bool]:
    """The canonical search written the slow, obvious way with the checker."""
    grid = [list(row) for row in task.grid]
    nodes = 0

    def search(depth: int) -> bool:
        nonlocal nodes
        slot = task.slots[depth]
        for item_id in locally_valid_candidates(task, slot):
            nodes += 1
            grid[slot.row][slot.col] = item_id
            if VIOLATED not in check_global(task, grid).values():
                if depth + 1 == len(task.slots) or search(depth + 1):
                    return True
            grid[slot.row][slot.col] = None
        return False

    found = search(0)
    return nodes, found


@given(small_tasks())
def test_canonical_search_matches_naive_reference(task):
    nodes, found, capped = CanonicalSearch(task, 10**6).run()
    assert not capped
    assert (nodes, found) == naive_dfs_nodes(task)
    assert found == bool(completions(task))


def test_measures_of_generated_tasks():
    made = generate_task(TaskKey("toy", 3, 3, 4, 6, 5, seed=2))
    task, answer = made.task, made.answer
    assert search_space(answer) == math.prod(1 + len(r.decoys) for r in answer.roles)
    assert answer.measures["search_space"] == search_space(answer)
    assert answer.measures["shallow_decoys"] == shallow_decoys(task, answer)
    assert answer.measures["dfs_nodes"] == naive_dfs_nodes(task)[0]


def _draft(seed: int) -> tuple[Draft, TaskKey]:
    key = TaskKey("course", 5, 7, 7, 8, 25, seed=seed)
    draft = Draft(get_domain("course"), 5, 7, key.rng("test", seed))
    sample_grid(draft, 7, 3)
    draw_global_rules(draft, 0.15, 0.3)
    assert _draft_decoys(draft, key, GenerationSettings()) is None
    return draft, key


def test_non_unique_draft_is_caught_and_repaired():
    for seed in range(3):
        draft, key = _draft(seed)
        cell = next(iter(draft.decoys))
        clone = draft.new_item({k: v for k, v in draft.truth_record(cell).items()
                                if k not in ("id", "name")})  # fmt: skip
        draft.decoys[cell].append(clone)  # a twin of the truth: a second completion
        order = {c: candidate_ids(draft, c) for c in draft.hidden}
        truth = {c: draft.truth[c[0]][c[1]] for c in draft.hidden}
        model = CpSatModel(build_task(draft, "t", 0, 0, order=order), SolverSettings(), truth)
        assert model.other_completion().status == FEASIBLE
        stats = RepairStats()
        make_unique(draft, "t", GenerationSettings(), SolverSettings(), stats)
        assert stats.redraws >= 1 and clone not in draft.decoys[cell]
        assert sum(len(v) for v in draft.decoys.values()) == 9  # re-drawn, not dropped
        order = {c: candidate_ids(draft, c) for c in draft.hidden}
        model = CpSatModel(build_task(draft, "t", 0, 0, order=order), SolverSettings(), truth)
        assert model.other_completion().status == INFEASIBLE


def test_integrity_over_a_sample_of_tasks():
    shallow = decoys = 0
    positions: Counter = Counter()
    for index, (hidden, budget) in enumerate([(5, 8), (7, 15), (11, 19), (15, 25), (21, 21)]):
        for domain in ("course", "travel", "workforce"):
            made = generate_task(TaskKey(domain, 5, 7, hidden, budget, 27, index=index))
            shallow += made.answer.measures["shallow_decoys"]
            decoys += budget
            truth = {(r.row, r.col): r.truth for r in made.answer.roles}
            for slot in made.task.slots:
                positions[slot.candidates.index(truth[(slot.row, slot.col)])] += 1
                assert list(slot.candidates) != sorted(slot.candidates) or len(slot.candidates) < 3
    assert shallow / decoys < 0.10
    assert len(positions) > 10  # the truth is not kept in a fixed place


def test_a_solver_time_out_is_never_a_proof(monkeypatch):
    from pipeline.certify import certify
    from solvers.results import UNKNOWN, SolveResult

    made = generate_task(TaskKey("toy", 3, 3, 4, 6, 5, seed=1))
    assert certify(made.task, made.answer, SolverSettings())["ok"]
    monkeypatch.setattr(CpSatModel, "solve", lambda self, *a, **k: SolveResult(UNKNOWN, 1.0))
    record = certify(made.task, made.answer, SolverSettings())
    assert not record["ok"]
    assert record["uniqueness"] == UNKNOWN and record["truth_feasible"] == UNKNOWN
    assert any("not refuted (UNKNOWN)" in failure for failure in record["failures"])


def test_surface_shortcuts_stay_near_chance():
    """Deterministic sample (fixed keys): surface policies pick the truth on decoy cells about
    as often as a uniform guess among the candidates that pass the slot rules."""
    from pipeline.audit import audit_task

    cells, chance, hits = 0, 0.0, Counter()
    for domain in ("course", "meal", "pc_build", "shopping", "travel", "workforce"):
        for hidden, budget in ((5, 8), (7, 10), (11, 15), (15, 19), (21, 25)):
            made = generate_task(TaskKey(domain, 5, 7, hidden, budget, 27, seed=11))
            audit = audit_task(made.task, made.answer)
            cells += audit["decoy_cells"]
            chance += audit["chance"]
            hits.update(audit["hits"])
    for policy in ("first_listed", "smallest_id", "smallest_name", "most_typical",
                   "largest_slot_margin"):  # fmt: skip
        assert hits[policy] / cells < chance / cells + 0.08, (policy, hits[policy] / cells)
