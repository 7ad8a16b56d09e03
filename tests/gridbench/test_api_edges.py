"""The public Python API against arguments of the wrong kind (hostile round 4): each is a
``gridbench.UserError`` naming the argument, never an AttributeError or a TypeError from deep
inside, and never a silent wrong result."""

from __future__ import annotations

import math

import pytest

import gridbench
from gridbench import UserError
from tests.tiny import ANSWER, TASK, TRUTH


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (lambda: gridbench.Episode(None), "pass a task"),
        (lambda: gridbench.Episode(TASK.to_dict()), "got dict"),
        (lambda: gridbench.Episode(TASK, {"failure_rate": 0.1}), "settings must be"),
        (lambda: gridbench.Episode(TASK, seed=-1), "seed=-1"),
        (lambda: gridbench.Episode(TASK, seed="7"), "seed=7"),
        (lambda: gridbench.Episode(TASK, seed=1.5), "seed=1.5"),
        (lambda: gridbench.Episode(TASK, seed=math.nan), "seed=nan"),
        (lambda: gridbench.Episode(TASK, seed=True), "seed=True"),
        (lambda: gridbench.Episode(TASK, seed=2**64), "seed="),
    ],
)
def test_an_episode_of_the_wrong_arguments_is_a_user_error(build, named):
    with pytest.raises(UserError, match=named) as refused:
        build()
    assert "\n" not in str(refused.value)


def test_the_edges_of_the_seed_are_episodes():
    assert (
        gridbench.Episode(TASK, seed=0).rng.random() != gridbench.Episode(TASK, seed=2**63 - 1).rng.random()
    )


def test_a_record_s_episode_checks_its_seed(tiny_release):
    record = gridbench.load_release(tiny_release)[0]
    for seed in (-1, "a", None, 1.5):
        with pytest.raises(UserError, match="seed="):
            record.episode(seed=seed)


def test_tool_schemas_of_something_that_is_no_domain_name_are_refused():
    with pytest.raises(UserError, match=r"pass a domain name \(a str\), got list$"):
        gridbench.openai_schemas(["course"])
    assert gridbench.openai_schemas("toy")  # the domain's tools


def test_an_answer_whose_cells_are_not_the_task_s_hidden_cells_is_refused():
    """It scored every grid as a failure (its cell (9, 9) is never right) instead of saying so."""
    import dataclasses

    from core.task import SlotRoles

    moved = dataclasses.replace(ANSWER, roles=(ANSWER.roles[0], SlotRoles(9, 9, "G", (), ())))
    with pytest.raises(UserError) as refused:
        gridbench.score(TASK, TRUTH, moved)
    assert str(refused.value) == (
        "score: the answer's cells are not the task's hidden cells (e.g. [(1, 2), (9, 9)]); "
        "pass the answer file of this task"
    )
    many = dataclasses.replace(
        ANSWER, roles=tuple(SlotRoles(8, c, "G", (), ()) for c in range(5))
    )  # both hidden cells missing, five stray ones: the first three of the seven named
    with pytest.raises(UserError, match=r"\(e\.g\. \[\(0, 1\), \(1, 2\), \(8, 0\)\]\)"):
        gridbench.score(TASK, TRUTH, many)
    fewer = dataclasses.replace(ANSWER, roles=ANSWER.roles[:1])
    with pytest.raises(UserError, match=r"not the task's hidden cells \(e\.g\. \[\(1, 2\)\]\)"):
        gridbench.score(TASK, TRUTH, fewer)
    assert gridbench.score(TASK, TRUTH, ANSWER)["success"]


@pytest.mark.parametrize("limit", ["10", None, [1], True])
def test_a_time_limit_of_the_wrong_type_is_one_line(limit):
    with pytest.raises(UserError, match="time_limit_s"):
        gridbench.generate_task(
            gridbench.TaskKey("toy", 5, 5, 2, 0, 6), gridbench.GenerationSettings(time_limit_s=limit)
        )
