"""gridbench.create_dataset: certified tasks on the fly, deterministic byte for byte, with a
curriculum; every argument checked before anything is generated."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

import gridbench
from gridbench_core.errors import UserError
from pipeline.storage.layout import dumps
from tests import ROOT

SMALL = dict(
    domains=["course", "toy"], size=12, grid="5x5", hidden_slots=range(2, 6), decoy_budgets=[0, 2, 3, 5]
)


def _digest(item) -> str:
    return hashlib.sha256(dumps(item.task) + dumps(item.answer)).hexdigest()


def test_the_same_arguments_give_the_same_bytes_in_any_order_and_process():
    forward = [_digest(item) for item in gridbench.create_dataset(seed=3, **SMALL)]
    dataset = gridbench.create_dataset(seed=3, **SMALL)
    backward = [_digest(dataset[i]) for i in reversed(range(len(dataset)))][::-1]
    assert forward == backward
    code = (
        "import gridbench, hashlib, sys; from pipeline.storage.write import dumps; "
        f"d = gridbench.create_dataset(seed=3, **{SMALL!r}); "
        "print(hashlib.sha256(dumps(d[7].task) + dumps(d[7].answer)).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.stdout.strip() == forward[7], out.stderr
    other = [_digest(item) for item in gridbench.create_dataset(seed=4, **SMALL)]
    assert not set(other) & set(forward)
    salted = gridbench.create_dataset(seed=3, salt="secret", **SMALL)
    assert _digest(salted[7]) != forward[7] and "secret" not in json.dumps(salted[7].answer)


def test_items_are_certified_and_a_second_solver_agrees():
    from gridbench_core.task_io import answer_from_dict, task_from_dict
    from solvers.milp import crosscheck_answer

    for item in gridbench.create_dataset(seed=5, **SMALL):
        key = item.key
        assert key.domain in SMALL["domains"] and (key.rows, key.cols) == (5, 5)
        assert key.hidden_slots in SMALL["hidden_slots"] and key.decoy_budget in SMALL["decoy_budgets"]
        assert item.answer["certificate"]["ok"] and item.task["task_id"] == item.answer["task_id"]
        check = crosscheck_answer(task_from_dict(item.task), answer_from_dict(item.answer))
        assert check.ok and check.unique
        assert item.score(item.answer["truth"])["success"]
        assert item.episode().call("get_current_grid_state")["status"] == "ok"


def test_a_curriculum_raises_h_b_and_the_resistant_share_together():
    dataset = gridbench.create_dataset(
        domains=["course", "meal"],
        size=9,
        seed=2,
        hidden_slots=[3, 5, 7, 9, 11, 13],
        decoy_budgets=[2, 4, 8, 10, 15, 19],
        levels=3,
        max_resistant_share=0.5,
    )
    levels = dataset.levels
    assert [level.min_resistant_share for level in levels] == [0.0, 0.25, 0.5]
    assert max(levels[0].hidden_slots) < min(levels[1].hidden_slots) <= max(levels[1].hidden_slots)
    assert max(levels[1].decoy_budgets) < min(levels[2].decoy_budgets)
    items = list(dataset.generate(workers=2))
    assert [item.level for item in items] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [_digest(a) for a in items] == [_digest(dataset[i]) for i in range(9)]  # same in a pool
    for item in items:
        level = levels[item.level]
        assert item.key.hidden_slots in level.hidden_slots and item.key.decoy_budget in level.decoy_budgets
        roles = [r for r in item.answer["roles"] if r["decoys"]]
        propagation = item.answer["measures"]["propagation"]
        if len(roles) >= 2:  # the share applies to tasks with two or more decoy cells
            assert propagation["resistant"] >= level.min_resistant_share * propagation["decoys"]


def test_indexing_slicing_and_a_wrong_grid():
    dataset = gridbench.create_dataset(seed=1, **SMALL)
    assert len(dataset) == 12 and dataset[-1].index == 11 and [i.index for i in dataset[2:5]] == [2, 3, 4]
    with pytest.raises(IndexError):
        dataset[12]
    item = next(i for i in dataset if any(r["decoys"] for r in i.answer["roles"]))
    role = next(r for r in item.answer["roles"] if r["decoys"])
    wrong = [list(row) for row in item.answer["truth"]]
    wrong[role["row"]][role["col"]] = role["decoys"][0]
    assert item.score(wrong)["wrong_cells"] == [[role["row"], role["col"]]]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"size": 0}, "size=0"),
        ({"domains": []}, "domains"),
        ({"domains": ["course", "course"]}, "distinct"),
        ({"domains": ["nope"]}, "nope"),
        ({"grid": "5by7"}, "ROWSxCOLS"),
        ({"grid": "3x3", "hidden_slots": [10]}, "hidden_slots=10"),
        ({"decoy_budgets": [10**6]}, "more than 200"),
        ({"hidden_slots": []}, "hidden_slots"),
        ({"levels": 20, "size": 5}, "at least as many tasks"),
        ({"levels": 2, "max_resistant_share": 1.0}, "max_resistant_share"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_are_one_clear_error_before_any_work(arguments, message):
    with pytest.raises(UserError, match=message):
        gridbench.create_dataset(**{"size": 10, **arguments})


def test_a_draw_that_cannot_be_certified_is_redrawn_deterministically_or_raised(monkeypatch):
    import pipeline.generation.build as build
    from pipeline.generation.keys import GenerationError

    real = build.generate_task

    def refuse_b3(key, settings=None):
        if key.decoy_budget == 3:
            raise GenerationError(f"cannot certify B={key.decoy_budget}")
        return real(key, settings)

    monkeypatch.setattr(build, "generate_task", refuse_b3)
    arguments = {**SMALL, "decoy_budgets": [0, 3], "size": 8}
    items = list(gridbench.create_dataset(seed=9, **arguments))
    assert all(item.key.decoy_budget == 0 for item in items) and any(item.redraws for item in items)
    assert [_digest(i) for i in items] == [_digest(i) for i in gridbench.create_dataset(seed=9, **arguments)]
    with pytest.raises(GenerationError, match="cannot certify"):
        list(gridbench.create_dataset(seed=9, on_failure="raise", **arguments))
    with pytest.raises(GenerationError, match="none of 6 draws"):
        gridbench.create_dataset(seed=9, **{**arguments, "decoy_budgets": [3]})[0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"levels": [gridbench.Level((), (4,))]},
        {"levels": [gridbench.Level(5, 4)]},
        {"candidates_per_slot": 25.5},
        {"grid": (5.5, 7)},
        {"grid": (5, 7, 1)},
        {"grid": None},
        {"grid": 57},
        {"domains": None},
        {"domains": [5]},
        {"hidden_slots": 5.0},
        {"hidden_slots": "5"},
        {"levels": 2.0},
        {"levels": True},
        {"seed": True},
        {"max_resistant_share": "x"},
    ],
)
def test_every_wrong_argument_is_a_user_error_before_anything_is_made(kwargs):
    base = {"domains": "course", "size": 4, "seed": 0, "hidden_slots": [5], "decoy_budgets": [4]}
    with pytest.raises(gridbench.UserError):
        gridbench.create_dataset(**{**base, **kwargs})
