"""The gymnasium environment: the checker, rewards, truncation, hostile actions."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import gridbench
import gridbench.gym  # noqa: F401
from gridbench_core.errors import UserError
from tests.adapters.helpers import solving_moves


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def make(release: Path, **kwargs):
    return gymnasium.make("gridbench/Grid-v0", release=str(release), **kwargs)


def test_passes_the_gymnasium_checker(release):
    check_env(make(release, failure_rate=0.2).unwrapped, skip_render_check=False)


def test_reset_is_seeded_and_a_solve_pays_1_at_the_end(release):
    env = make(release)
    first, info = env.reset(seed=3)
    again, info2 = env.reset(seed=3)
    assert first == again and info["task_id"] == info2["task_id"] and len(info["tools"]) == 11
    assert info["task_id"] in first and "done()" in first
    record = gridbench.load_release(release)[info["task_id"]]
    rewards = []
    for name, arguments in solving_moves(record):
        _, reward, terminated, truncated, step_info = env.step({"name": name, "arguments": arguments})
        rewards.append(reward)
    assert terminated and not truncated and rewards[-1] == 1.0 and set(rewards[:-1]) == {0.0}
    assert step_info["score"]["success"] and env.render() is None


def test_the_step_limit_truncates_and_partial_reward_is_the_fraction_right(release):
    record = gridbench.load_release(release).filter(hidden_slots=[4])[0]
    env = make(release, max_steps=3, reward="partial", render_mode="ansi")
    env.reset(options={"task_id": record.task_id})
    moves = solving_moves(record)
    outcomes = [env.step(json.dumps({"name": n, "arguments": a})) for n, a in moves[:3]]
    *_, (text, reward, terminated, truncated, info) = outcomes
    assert truncated and not terminated and reward == 0.75 and info["score"]["fraction_correct"] == 0.75
    assert [o[1] for o in outcomes[:2]] == [0.0, 0.0] and "." in env.render()


@pytest.mark.parametrize(
    "action",
    [
        "",
        "not json",
        "[]",
        "{}",
        '{"name": 5}',
        '{"name": "done", "extra": 1}',
        None,
        42,
        b"\xff\xfe",
        {"name": "set_slot", "arguments": "[1, 2"},
        {"function": {"name": "nope", "arguments": "{}"}},
        "x" * 50_000,
    ],
)
def test_any_action_is_answered_never_raised(release, action):
    env = make(release)
    env.reset(seed=0)
    text, reward, terminated, truncated, info = env.step(action)
    result = json.loads(text)
    assert result["status"] == "error" and reward == 0.0 and not terminated and not truncated
    assert info["steps"] == 1 and len(result["message"]) <= 1000


def test_openai_tool_calls_and_generated_tasks_work(release):
    tasks = gridbench.create_dataset(
        ["toy"], size=2, seed=5, grid="4x4", hidden_slots=2, decoy_budgets=1, candidates_per_slot=4
    )
    env = gymnasium.make("gridbench/Grid-v0", tasks=tasks)
    _, info = env.reset(options={"index": 1})
    assert info["task_id"] == tasks[1].task_id
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_global_check_budget", "arguments": "{}"},
    }
    assert json.loads(env.step(call)[0])["status"] == "ok"


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({}, "release=PATH or tasks"),
        ({"release": "R", "reward": "dense"}, "reward"),
        ({"release": "R", "domains": "chess"}, "no task"),
        ({"release": "R", "failure_rate": -1}, "failure_rate"),
        ({"tasks": []}, "non-empty"),
    ],
)
def test_bad_options_name_the_problem(release, kwargs, needle):
    kwargs = {k: (str(release) if v == "R" else v) for k, v in kwargs.items()}
    with pytest.raises(UserError, match=needle):
        gymnasium.make("gridbench/Grid-v0", **kwargs)


def test_the_reward_is_paid_once_and_the_end_flags_stay(release):
    record = gridbench.load_release(release).filter(hidden_slots=[2])[0]
    env = make(release, max_steps=4)
    env.reset(options={"task_id": record.task_id, "episode_seed": 0})
    steps = [env.step({"name": n, "arguments": a}) for n, a in solving_moves(record)]  # 2 sets + done
    steps += [env.step({"name": "done", "arguments": {}}) for _ in range(3)]
    assert [s[1] for s in steps] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert [(s[2], s[3]) for s in steps[2:]] == [(True, False)] * 4
    assert all(not s[4]["score"]["truncated"] for s in steps[2:])
    env.reset(options={"task_id": record.task_id})
    ends = [env.step({"name": "get_global_check_budget", "arguments": {}}) for _ in range(6)]
    assert [(s[1], s[2], s[3]) for s in ends][3:] == [(0.0, False, True)] * 3
    assert ends[3][4]["score"]["truncated"]


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"index": 99}, "index"),
        ({"index": -1}, "index"),
        ({"index": True}, "index"),
        ({"index": np.bool_(True)}, "index"),
        ({"index": np.int64(99)}, "index"),
        ({"index": "1"}, "index"),
        ({"episode_seed": "x"}, "episode_seed"),
        ({"task_id": "nope"}, "task_id"),
        ({"colour": 1}, "unknown"),
        ("notadict", "dict"),
    ],
)
def test_bad_reset_options_name_the_problem_and_a_good_reset_still_works(release, options, needle):
    env = make(release)
    with pytest.raises(UserError, match=needle):
        env.reset(options=options)
    env.reset(seed=0)
    assert json.loads(env.step({"name": "get_global_check_budget", "arguments": {}})[0])["status"] == "ok"


def test_numpy_integers_are_indices_and_seeds(release):
    """Round 8: ``np.int64(0)``, what a vector env or a numpy sampler hands out, was refused."""
    env = make(release)
    prompt, _ = env.reset(options={"index": np.int64(1), "episode_seed": np.int32(3)})
    assert prompt == env.reset(options={"index": 1, "episode_seed": 3})[0]


def test_task_ids_of_generated_tasks_are_refused_without_generating_them():
    tasks = gridbench.create_dataset(
        ["toy"], size=3, seed=5, grid="4x4", hidden_slots=2, decoy_budgets=1, candidates_per_slot=4
    )
    env = gymnasium.make("gridbench/Grid-v0", tasks=tasks)
    with pytest.raises(UserError, match="use index"):
        env.reset(options={"task_id": "toy-123"})
    assert not tasks._cache


def test_the_spec_states_the_step_limit(release):
    import gymnasium

    import gridbench.gym  # noqa: F401

    env = gymnasium.make("gridbench/Grid-v0", release=str(release))
    assert env.spec.max_episode_steps == 200
    short = gymnasium.make("gridbench/Grid-v0", release=str(release), max_steps=5)
    assert short.spec.max_episode_steps == 5
    short.reset(seed=0)
    for _ in range(5):
        *_, truncated, _ = short.step({"name": "get_current_grid_state", "arguments": {}})
    assert truncated  # the stated limit is the one the environment keeps


def test_an_async_vector_env_of_forked_workers_plays(release):
    """Interop round 7: gymnasium's async vector env forks a worker per environment, and each
    opened the release with polars, used in the parent before the fork: every worker hung.
    The release's index is read with pyarrow alone."""
    import subprocess
    import sys

    script = (
        "import sys, gymnasium, gridbench.gym, polars\n"
        "polars.DataFrame({'a': list(range(100000))}).sort('a')  # polars' threads, before the fork\n"
        "venv = gymnasium.make_vec('gridbench/Grid-v0', num_envs=2, vectorization_mode='async',\n"
        "    vector_kwargs={'context': 'fork'}, release=sys.argv[1])\n"
        "venv.reset(seed=0)\n"
        "_, reward, *_ = venv.step(({'name': 'get_current_grid_state', 'arguments': {}},) * 2)\n"
        "venv.close()\n"
        "print('played', [float(r) for r in reward])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(release)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "played [0.0, 0.0]" in done.stdout, done.stderr[-2000:]


VECTOR_SCRIPT = """
import json, sys, gymnasium, gridbench.gym

def main():
    release, context = sys.argv[1], sys.argv[2]
    kwargs = {} if context == "default" else {"context": context}
    venv = gymnasium.make_vec("gridbench/Grid-v0", num_envs=2, vectorization_mode="async",
        vector_kwargs=kwargs, release=release)  # shared memory: gymnasium's default
    single = gymnasium.make("gridbench/Grid-v0", release=release)
    observations, info = venv.reset(seed=0)
    seen = {"reset": [], "step": [], "end": []}
    odd = {"name": "\\u00e9\\ud800 \\u540d", "arguments": {}}  # echoed in the error message
    state = {"name": "get_current_grid_state", "arguments": {}}
    done = {"name": "done", "arguments": {}}
    stepped, _, _, _, step_info = venv.step((odd, state))
    ended, reward, terminated, _, end_info = venv.step((done, done))
    for i in range(2):
        prompt, _ = single.reset(options={"task_id": info["task_id"][i]})
        seen["reset"].append(observations[i] == prompt)
        seen["step"].append(stepped[i] == single.step((odd, state)[i])[0])
        text, r, t, _, last = single.step(done)
        seen["end"].append([ended[i] == text, float(reward[i]) == r, bool(terminated[i]) == t,
                            bool(end_info["score"]["success"][i]) == last["score"]["success"]])
    venv.close()
    print(json.dumps({"seen": seen, "statuses": list(step_info["result"]["status"]),
                      "unicode": "\\u540d" in stepped[0]}))

if __name__ == "__main__":
    main()
"""


def _vector_play(release, context: str) -> dict:
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", VECTOR_SCRIPT, str(release), context],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_like_single(played: dict) -> None:
    assert played["seen"]["reset"] == [True, True], played
    assert played["seen"]["step"] == [True, True], played
    assert played["seen"]["end"] == [[True] * 4, [True] * 4], played
    assert played["statuses"] == ["error", "ok"] and played["unicode"], played


def test_an_async_vector_env_with_shared_memory_sees_what_a_single_env_sees(release):
    """Gymnasium's async vector env keeps observations in shared memory by default, and read a
    ``Text`` space's buffer once, when it was made: every observation was a million '0's, and
    a character outside the space's charset failed in the worker. Two environments calling
    different tools (an error beside a grid) also broke the stacking of their infos. Each
    observation, reward and end now equals a single environment's on the same task."""
    _assert_like_single(_vector_play(release, "default"))


@pytest.mark.slow
@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_an_async_vector_env_of_spawned_workers_sees_what_a_single_env_sees(release, context):
    _assert_like_single(_vector_play(release, context))
