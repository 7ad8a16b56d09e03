"""Scoring counts are bounded by the cells they count, and count over the right role: the
decoy cells are the hidden cells that have decoys (not every hidden cell), a correct decoy
cell is one of those holding its truth, the chance is at most one per decoy cell; the wrong
cells of ``gridbench.score`` are hidden cells, the changed ones visible cells. (A planted
mutant that counted correct decoy cells over every role survived the suite: the tiny task's
every hidden cell has decoys.)"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import gridbench
from gridbench.env import EnvSettings, Episode
from gridbench.env.scoring import score_episode, score_grid
from gridbench_core.task import SlotRoles
from tests.tiny import ANSWER, TASK, TRUTH

# (0, 1) keeps its decoys A and D; (1, 2) is a cell without decoys (E, F called filtered here)
ONE_DECOY_CELL = dataclasses.replace(ANSWER, roles=(ANSWER.roles[0], SlotRoles(1, 2, "G", (), ("E", "F"))))
HIDDEN = [(0, 1), (1, 2)]
OPTIONS = {(0, 1): ["A", "B", "C", "D", None], (1, 2): ["E", "F", "G", None]}


def _play(placed: dict[tuple[int, int], str | None]) -> Episode:
    episode = Episode(TASK, EnvSettings(), seed=0)
    for (row, col), item in placed.items():
        episode.call("set_slot", {"row": row, "col": col, "id": item})
    return episode


def test_correct_decoy_cells_count_only_the_cells_with_decoys():
    right = score_episode(_play({(0, 1): "C", (1, 2): "G"}), ONE_DECOY_CELL)
    assert right["decoy_cells"] == 1 and right["decoy_cells_correct"] == 1
    assert right["decoy_cells_chance"] == pytest.approx(1 / 3)
    only_the_other = score_episode(_play({(0, 1): "A", (1, 2): "G"}), ONE_DECOY_CELL)
    assert only_the_other["decoy_cells_correct"] == 0  # (1, 2) is right but has no decoys
    assert only_the_other["fraction_correct"] == 0.5 and not only_the_other["success"]


@example(placed=("C", "G"), answer=1)
@example(placed=("A", "G"), answer=1)
@example(placed=(None, None), answer=0)
@given(
    placed=st.tuples(st.sampled_from(OPTIONS[(0, 1)]), st.sampled_from(OPTIONS[(1, 2)])),
    answer=st.sampled_from([0, 1]),
)
def test_every_count_is_bounded_by_the_cells_it_counts(placed, answer):
    roles = (ANSWER, ONE_DECOY_CELL)[answer]
    result = score_episode(_play(dict(zip(HIDDEN, placed, strict=True))), roles)
    decoy_cells = [(r.row, r.col) for r in roles.roles if r.decoys]
    truth = {(r.row, r.col): r.truth for r in roles.roles}
    right = [cell for cell, item in zip(HIDDEN, placed, strict=True) if item == truth[cell]]
    assert result["decoy_cells"] == len(decoy_cells)
    assert result["decoy_cells_correct"] == sum(cell in decoy_cells for cell in right)
    assert 0 <= result["decoy_cells_correct"] <= result["decoy_cells"]
    assert 0 <= result["decoy_cells_chance"] <= result["decoy_cells"]
    assert result["fraction_correct"] == len(right) / len(HIDDEN)
    assert result["success"] == (len(right) == len(HIDDEN))


@pytest.mark.parametrize(
    "placed", list(itertools.product(OPTIONS[(0, 1)], OPTIONS[(1, 2)])), ids=lambda p: str(p)
)
def test_the_public_score_names_only_hidden_wrong_cells_and_visible_changed_ones(placed):
    grid = [list(row) for row in TRUTH]
    for (row, col), item in zip(HIDDEN, placed, strict=True):
        grid[row][col] = item
    result = gridbench.score(TASK, grid, ANSWER)
    assert all(tuple(cell) in HIDDEN for cell in result["wrong_cells"])
    assert result["fixed_cells_changed"] == []
    assert result == {**score_grid(grid, ANSWER.truth_choice()), "fixed_cells_changed": []}
    grid[0][0] = "V02"  # a visible cell changed too: named, and never a success
    changed = gridbench.score(TASK, grid, ANSWER)
    assert changed["fixed_cells_changed"] == [[0, 0]] and not changed["success"]
    assert changed["wrong_cells"] == result["wrong_cells"]  # it is no hidden cell's fault


def test_an_episode_ended_at_its_step_limit_is_finished():
    """``finished`` says the episode ended, on done() or on the step limit (``end_reason``
    and ``truncated`` say which): an episode cut at its limit is not still running."""
    episode = Episode(TASK, EnvSettings(max_steps=2), seed=0)
    for _ in range(3):
        episode.call("get_current_grid_state")
    result = score_episode(episode, ANSWER)
    assert episode.truncated and result["finished"] and not result["success"]
    open_episode = Episode(TASK, EnvSettings(max_steps=5), seed=0)
    open_episode.call("get_current_grid_state")
    assert not score_episode(open_episode, ANSWER)["finished"]


def test_queries_and_checks_are_counted_apart():
    """Planted bug q57 (round 7): ``checks_used`` reported the queries; one of each hid it."""
    episode = Episode(TASK, EnvSettings(), seed=0)
    for value in (0, 1, 2):
        episode.call(
            "query_toy_candidate_from_attribute",
            {"row": 0, "col": 1, "field": "cost", "operator": ">=", "value": value},
        )
    result = score_episode(episode, ANSWER)
    assert (result["queries_used"], result["checks_used"]) == (3, 0)
    episode.call("check_toy_global_constraints")
    assert (
        score_episode(episode, ANSWER)["queries_used"],
        score_episode(episode, ANSWER)["checks_used"],
    ) == (3, 1)


def test_a_hidden_candidate_s_attributes_are_not_given_away():
    """Planted bug q59 (round 7): the attributes tool answered for any item of the task, so a
    hidden cell's candidates were read for free, outside the query budget."""
    episode = Episode(TASK, EnvSettings(), seed=0)
    hidden = ANSWER.roles[0].truth
    reply = episode.call("get_toy_item_attributes", {"ids": [hidden], "field": "weight"})
    assert reply["status"] == "error" and hidden in reply["message"], reply
    info = episode.call("get_toy_item_info", {"id": hidden})
    assert info["status"] == "error", info


def test_wrong_cells_are_listed_row_by_row_whatever_the_order_of_the_truth():
    """Planted bug q58 (round 7): wrong cells followed the answer's order (a hand-made file
    whose roles are not row-major listed them out of order)."""
    truth = {(1, 2): "F", (0, 1): "C", (1, 0): "B"}
    assert score_grid([[None] * 3, [None] * 3], truth)["wrong_cells"] == [[0, 1], [1, 0], [1, 2]]


def test_each_trial_of_an_evaluation_draws_its_own_failures():
    """Planted bug q62 (round 7): every trial was seeded 0, so trials replayed one draw."""
    from gridbench.agents.harness import Job, _episode
    from gridbench.env import EnvSettings as Settings

    draws = []
    for trial in (0, 1):
        job = Job("", "tasks/toy/x.json", 0.5, trial, "0" * 16)
        draws.append(_episode(job, Settings(), TASK, False).rng.random())
        assert draws[-1] == Episode(TASK, Settings(failure_rate=0.5), seed=trial).rng.random()
    assert draws[0] != draws[1]
