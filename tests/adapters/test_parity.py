"""Every adapter plays the same three tasks with the same scripted moves (an invalid call and
injected failures included) and must give the same tool results and scores as
``Episode.call`` directly."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import gridbench
from gridbench.env import EnvSettings, Episode
from gridbench.env.scoring import score_grid
from gridbench_core.task_io import task_from_dict
from tests.adapters.helpers import inspect_policy, scripted_moves, truth_of

RATE = 0.3
MAX_STEPS = 200


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


@pytest.fixture(scope="module")
def records(release) -> list[Any]:
    loaded = gridbench.load_release(release)
    chosen = [
        loaded.filter(domains=["course"], hidden_slots=[4], decoy_budgets=[3])[0],
        loaded.filter(domains=["toy"], hidden_slots=[4], decoy_budgets=[3])[0],
        loaded.filter(domains=["course"], hidden_slots=[2], decoy_budgets=[0])[0],
    ]
    return chosen


def direct(record: Any, moves: list) -> tuple[list[dict], dict]:
    episode = Episode(
        task_from_dict(record.task), EnvSettings(failure_rate=RATE, max_steps=MAX_STEPS), seed=0
    )
    results = [episode.call(name, arguments) for name, arguments in moves]
    graded = score_grid(episode.grid, truth_of(record))
    return results, graded


def via_gym(release: Path, record: Any, moves: list) -> tuple[list[dict], dict]:
    import gymnasium

    import gridbench.gym  # noqa: F401

    env = gymnasium.make(
        "gridbench/Grid-v0", release=str(release), failure_rate=RATE, max_steps=MAX_STEPS, reward="partial"
    )
    env.reset(seed=7, options={"task_id": record.task_id, "episode_seed": 0})
    results, rewards = [], []
    for name, arguments in moves:
        text, reward, terminated, truncated, info = env.step(
            json.dumps({"name": name, "arguments": arguments})
        )
        results.append(json.loads(text))
        rewards.append(reward)
    assert terminated and not truncated
    assert rewards[:-1] == [0.0] * (len(rewards) - 1)
    return results, {**info["score"], "reward": rewards[-1]}


def via_trl(release: Path, record: Any, moves: list) -> tuple[list[dict], dict]:
    from gridbench.adapters.trl import environments

    rows, factories = environments(release=str(release), failure_rate=RATE, max_steps=MAX_STEPS)
    row = next(r for r in rows if r["task_id"] == record.task_id)
    env = factories[row["environment"]]()
    env.reset(**{k: v for k, v in row.items() if k != "environment"})  # as GRPOTrainer does
    results = [json.loads(getattr(env, name)(**arguments)) for name, arguments in moves]
    return results, {**env.session.score(), "reward": env.get_reward()}


def via_mcp(release: Path, record: Any, moves: list) -> tuple[list[dict], dict]:
    from mcp import Client, StdioServerParameters

    async def play() -> tuple[list[dict], dict]:
        args = ["-m", "gridbench.mcp", f"release={release}", f"task={record.task_id}", f"failure_rate={RATE}"]
        async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
            results = []
            for name, arguments in moves:
                reply = await client.call_tool(name, arguments)
                result = json.loads(reply.content[0].text)
                assert reply.is_error == (result["status"] == "error")
                results.append(result)
            score = await client.read_resource("gridbench://score")
            return results, json.loads(score.contents[0].text)

    return anyio.run(play)


def via_inspect(release: Path, records: list, moves: dict, tmp_path: Path) -> dict[str, tuple[list, dict]]:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ChatMessageTool, get_model

    logs = inspect_eval(
        "gridbench/gridbench",
        model=get_model("mockllm/model", custom_outputs=inspect_policy(moves)),
        task_args={
            "release": str(release),
            "failure_rate": RATE,
            "max_steps": MAX_STEPS,
            "task_ids": ",".join(r.task_id for r in records),
        },
        log_dir=str(tmp_path),
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    log = read_eval_log(logs[0].location)
    out = {}
    for sample in log.samples:
        results = [json.loads(m.text) for m in sample.messages if isinstance(m, ChatMessageTool)]
        out[sample.id] = (results, sample.scores["grid_score"].metadata)
    return out


ADAPTERS = ["gymnasium", "trl", "mcp", "inspect"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_every_adapter_gives_the_tool_results_and_scores_of_the_episode(adapter, release, records, tmp_path):
    moves = {r.task_id: scripted_moves(r) for r in records}
    if adapter == "inspect":
        played = via_inspect(release, records, moves, tmp_path)
    else:
        play = {"gymnasium": via_gym, "trl": via_trl, "mcp": via_mcp}[adapter]
        played = {r.task_id: play(release, r, moves[r.task_id]) for r in records}
    statuses = set()
    for record in records:
        expected, graded = direct(record, moves[record.task_id])
        results, score = played[record.task_id]
        assert results == expected, f"{adapter}: {record.task_id}"
        assert (
            score["success"] == graded["success"] and score["fraction_correct"] == graded["fraction_correct"]
        )
        assert score["wrong_cells"] == graded["wrong_cells"]
        assert score["invalid_calls"] >= 1 and score["steps"] == len(moves[record.task_id])
        if adapter == "gymnasium":  # reward="partial"
            assert score["reward"] == graded["fraction_correct"]
        if adapter == "trl":  # reward="success"
            assert score["reward"] == float(graded["success"])
        statuses |= {r["status"] for r in results}
    # the moves must exercise what the issue asks: an invalid call and an injected failure
    assert {"ok", "error", "failed"} <= statuses
