"""TRL environments, driven the way GRPOTrainer drives them (trl/trainer/grpo_trainer.py):
tools found with inspect.getmembers, schemas by transformers' get_json_schema, calls as
method(**arguments), the reset string appended to the prompt, get_reward at the end."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import gridbench
from gridbench.adapters.trl import environments
from gridbench.env import openai_schemas
from gridbench_core.errors import UserError
from tests.adapters.helpers import solving_moves


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def tools_of(instance) -> dict:
    """What GRPOTrainer exposes as tools: public functions of the class but reset/get_reward."""
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def rollout(factories, row, moves) -> tuple[str, list[dict], float]:
    env = factories[row["environment"]]()
    prompt = row["prompt"][-1]["content"] + env.reset(**{k: v for k, v in row.items() if k != "environment"})
    tools = tools_of(env)
    results = []
    for name, arguments in moves:  # a tool call as the trainer parses it from the completion
        call = {"type": "function", "function": {"name": name, "arguments": arguments}}
        function = call["function"]
        results.append(json.loads(tools[function["name"]](**function["arguments"])))
    return prompt, results, env.get_reward()


def test_schemas_seen_by_the_model_match_the_episode_tools(release):
    from transformers.utils import get_json_schema  # slow to import: only where this runs

    rows, factories = environments(release=str(release))
    assert sorted(factories) == ["course", "toy"] and len(rows) == 8
    for domain, factory in factories.items():
        ours = {s["function"]["name"]: s["function"] for s in openai_schemas(domain)}
        tools = tools_of(factory())
        assert sorted(tools) == sorted(ours)
        for name, method in tools.items():
            schema = get_json_schema(method)["function"]
            expected = ours[name]["parameters"]
            assert schema["name"] == name and schema["description"] == ours[name]["description"]
            assert list(schema["parameters"]["properties"]) == list(expected["properties"])
            assert schema["parameters"].get("required", []) == expected["required"]
            for param, spec in schema["parameters"]["properties"].items():
                if "enum" in expected["properties"][param]:
                    assert spec["enum"] == list(expected["properties"][param]["enum"])


def test_a_scripted_policy_solves_each_task_and_a_wrong_one_earns_nothing(release):
    rows, factories = environments(release=str(release), trials=2)
    loaded = gridbench.load_release(release)
    assert len(rows) == 16 and {r["episode_seed"] for r in rows} == {0, 1}
    for row in rows[::3]:
        record = loaded[row["task_id"]]
        prompt, results, reward = rollout(factories, row, solving_moves(record))
        assert record.task_id in prompt and reward == 1.0 and {r["status"] for r in results} == {"ok"}
        _, _, reward = rollout(factories, row, [("done", {})])
        assert reward == 0.0


def test_bad_calls_reach_the_episode_and_are_answered(release):
    rows, factories = environments(release=str(release))
    env = factories[rows[0]["environment"]]()
    assert "reset() was not called" in env.set_slot(row=0, col=0, id=None)
    env.reset(**{k: v for k, v in rows[0].items() if k != "environment"})
    missing = json.loads(env.set_slot(row=0))
    extra = json.loads(env.get_global_check_budget(colour="blue"))
    wrong = json.loads(env.set_slot(row="zero", col=0, id=None))
    assert [r["status"] for r in (missing, extra, wrong)] == ["error"] * 3
    assert env.session.episode.invalid == 3


def test_tasks_generated_on_the_fly_give_rows_without_generating(release):
    tasks = gridbench.create_dataset(
        ["toy", "course"], size=4, seed=11, grid="4x4", hidden_slots=2, decoy_budgets=1, candidates_per_slot=4
    )
    rows, factories = environments(tasks=tasks, reward="partial")
    assert len(rows) == 4 and not tasks._cache  # nothing generated yet
    row = rows[2]
    env = factories[row["environment"]]()
    env.reset(**{k: v for k, v in row.items() if k != "environment"})
    assert env.session.task.domain == row["environment"] == tasks[2].task["domain"]
    moves = solving_moves(tasks[2])
    for name, arguments in moves[:1]:
        getattr(env, name)(**arguments)
    assert env.get_reward() == 0.5


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({}, "release=PATH or tasks"),
        ({"release": "R", "reward": "dense"}, "reward"),
        ({"release": "R", "trials": 0}, "trials"),
        ({"release": "R", "hidden_slots": [9]}, "no task"),
    ],
)
def test_bad_options_name_the_problem(release, kwargs, needle):
    kwargs = {k: (str(release) if v == "R" else v) for k, v in kwargs.items()}
    with pytest.raises(UserError, match=needle):
        environments(**kwargs)


def test_bad_rows_and_extra_positional_arguments(release):
    rows, factories = environments(release=str(release))
    env = factories[rows[0]["environment"]]()
    for bad in ({"task_index": 99}, {"task_index": "1"}, {"task_index": True}, {"episode_seed": -1}):
        with pytest.raises(UserError):
            env.reset(**{**{k: v for k, v in rows[0].items() if k != "environment"}, **bad})
    env.reset(**{k: v for k, v in rows[0].items() if k != "environment"})
    extra = json.loads(env.get_current_grid_state(1, 2))
    assert extra["status"] == "error" and "positional" in extra["message"]
    assert env.session.episode.invalid == 1 and env.session.episode.steps == 1


def reset_row(env, row) -> str:
    return env.reset(**{k: v for k, v in row.items() if k != "environment"})


def play_to(env, solve: bool) -> float:
    """Solve the grid (or just say done) and return the reward."""
    item = type("Item", (), {"answer": env._handed.item.answer})()
    for name, arguments in solving_moves(item) if solve else [("done", {})]:
        getattr(env, name)(**arguments)
    return env.get_reward()


def test_an_adaptive_source_feeds_the_rollouts_and_gets_their_rewards():
    from gridbench.adaptive import AdaptiveSource, ladder

    source = AdaptiveSource("toy", seed=0, ladder=ladder("4x4", [2, 3], [0, 2]), window=2)
    rows, factories = environments(tasks=source, trials=3)
    assert [row["environment"] for row in rows] == ["toy"] * 3 and list(factories) == ["toy"]
    assert [row["task_index"] for row in rows] == [0, 1, 2]
    ids = []
    for row in rows[:2]:
        env = factories["toy"]()
        prompt = reset_row(env, row)
        assert f"Task {env.session.task_id} (" in prompt
        ids.append(env.session.task_id)
        assert play_to(env, solve=True) == 1.0 and env.get_reward() == 1.0  # reported once
    assert ids[0] != ids[1]
    assert source.level == 1 and source.stats()["reported"] == 2
    env = factories["toy"]()
    reset_row(env, rows[2])
    reset_row(env, rows[2])  # the first is abandoned
    assert len(source.pending) == 1
    reset_row(env, rows[2])  # with group_size 1 every reset draws a new task
    assert len(source.pending) == 1 and source.handed == 5
    with pytest.raises(UserError, match="needs one domain"):
        environments(tasks=AdaptiveSource(["toy", "course"], ladder=ladder("4x4", [2], [0])))
    with pytest.raises(UserError, match="num_generations"):
        environments(tasks=AdaptiveSource("toy", ladder=ladder("4x4", [2], [0])), group_size=0)


def test_grpo_groups_share_one_task_and_report_its_mean():
    """GRPOTrainer's RepeatSampler plays each row num_generations times in a row: those
    rollouts compare against each other, so they get one task; the source hears its mean."""
    from gridbench.adaptive import AdaptiveSource, ladder

    source = AdaptiveSource("toy", seed=0, ladder=ladder("4x4", [2, 3], [0, 2]), window=1, band=0.0)
    rows, factories = environments(tasks=source, trials=2, group_size=3)
    envs = [factories["toy"]() for _ in range(6)]
    for env, row in zip(envs, [rows[0]] * 3 + [rows[1]] * 3, strict=True):  # as the sampler repeats
        reset_row(env, row)
    first, second = {e.session.task_id for e in envs[:3]}, {e.session.task_id for e in envs[3:]}
    assert len(first) == 1 and len(second) == 1 and first != second and source.handed == 2
    assert play_to(envs[0], solve=True) == 1.0 and play_to(envs[1], solve=False) == 0.0
    assert source.stats()["reported"] == 0  # the group is not in yet
    play_to(envs[2], solve=True)
    assert source.stats()["reported"] == 1 and source.stats()["success_by_level"][0] == pytest.approx(2 / 3)
    envs[3].get_reward()
    reset_row(envs[4], rows[1])  # rollout 4 is reset before its reward: it leaves its group ...
    assert source.stats()["reported"] == 0 + 1 and source.handed == 3  # ... and row 1 starts a new one
    envs[5].get_reward()
    assert source.stats()["reported"] == 2  # rollouts 3 and 5 settle the first group of row 1
    for env in envs[:3]:  # the next epoch of row 0: a new task
        reset_row(env, rows[0])
    assert source.handed == 4 and len({e.session.task_id for e in envs[:3]} | first) == 2


def test_get_reward_called_as_a_tool_ends_the_episode(release):
    """TRL before 1.8 exposes every public method but ``reset`` as a tool, ``get_reward``
    included: with a partial reward, a model calling it after each move read how many cells were
    right (round 8). Called mid-rollout it now ends the episode, and its value is the reward."""
    rows, factories = environments(release=str(release), reward="partial")
    row = rows[0]
    env = factories[row["environment"]]()
    env.reset(**{k: v for k, v in row.items() if k != "environment"})
    record = gridbench.load_release(release).records[row["task_index"]]
    first = solving_moves(record)[0]
    json.loads(getattr(env, first[0])(**first[1]))
    mid = env.get_reward()  # as a tool, one right cell in
    assert env.session.over
    again = json.loads(getattr(env, first[0])(**first[1]))
    assert again["status"] == "error" and "over" in again["message"]
    assert env.get_reward() == mid  # the rollout's reward is the grade already read
