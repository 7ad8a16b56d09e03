"""The OpenEnv environment: its Environment interface played directly (quick), and over a real
local OpenEnv server with OpenEnv's own clients (slow): reset/step/state, the episode's tool
results and score, concurrent sessions kept apart, and the adaptive source as the task source
(its rewards reported back, its rung moving)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gridbench
from gridbench.adapters.feed import Feed
from gridbench.adaptive import AdaptiveSource, ladder
from gridbench.env import EnvSettings
from gridbench_core.errors import UserError
from tests import ROOT
from tests.adapters.helpers import scripted_moves, solving_moves
from tests.adapters.test_parity import MAX_STEPS, RATE, direct

# OpenEnv (and the web stack it brings) takes seconds to import: it is imported by the tests
# that use it, in the worker that runs them, not by every worker that collects this module
pytestmark = pytest.mark.skipif(importlib.util.find_spec("openenv") is None, reason="no openenv")


def oe():
    """The module gridbench.adapters.openenv_env (GridAction, GridbenchClient,
    GridbenchEnvironment, main, make_app), imported on first use."""
    import gridbench.adapters.openenv_env as module

    return module


TOY_LADDER = ladder("4x4", hidden_slots=[2, 3], decoy_budgets=[0, 2])


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def test_the_environment_plays_an_episode_as_the_episode_does(release):
    record = gridbench.load_release(release).filter(domains=["course"], hidden_slots=[4])[0]
    feed = Feed.of(release=str(release))
    env = oe().GridbenchEnvironment(feed, EnvSettings(failure_rate=RATE, max_steps=MAX_STEPS))
    first = env.reset(task_id=record.task_id, episode_seed=0)
    assert first.task_id == record.task_id and f"Task {record.task_id} (" in first.text and first.tools
    moves = scripted_moves(record)
    results = [env.step(oe().GridAction(name=n, arguments=a)) for n, a in moves]
    expected, graded = direct(record, moves)
    assert [r.result for r in results] == expected
    assert [json.loads(r.text) for r in results] == expected
    assert [r.done for r in results] == [False] * (len(moves) - 1) + [True]
    last = results[-1]
    assert last.reward == float(graded["success"]) and last.score["wrong_cells"] == graded["wrong_cells"]
    assert env.state.finished and env.state.step_count == len(moves)
    after = env.step(oe().GridAction(name="get_current_grid_state"))
    assert after.done and after.result["status"] == "error" and "reset()" in after.result["message"]


def test_an_adaptive_source_gets_the_reward_of_each_ended_episode_and_none_of_an_abandoned_one():
    source = AdaptiveSource(["toy"], seed=0, ladder=TOY_LADDER, window=1)
    env = oe().GridbenchEnvironment(Feed.of(tasks=source))
    with pytest.raises(UserError, match="an adaptive source picks the task"):
        env.reset(task_id="toy-000000000000")
    env.reset()
    assert env.state.level == 0
    for name, arguments in solving_moves(env.item):
        observation = env.step(oe().GridAction(name=name, arguments=arguments))
    assert observation.done and observation.reward == 1.0
    assert source.level == 1 and source.stats()["reported"] == 1
    env.reset()
    env.step(oe().GridAction(name="get_current_grid_state"))
    env.close()  # closed before its end: abandoned, moves nothing
    assert source.level == 1 and source.stats()["reported"] == 1 and not source.pending


def test_bad_options_are_one_line(release, capsys):
    assert oe().main([f"release={release}", "port=x"]) == 2
    assert oe().main(["relaese=x"]) == 2
    assert oe().main(["adaptive=/nonexistent.yaml"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err] == ["error"] * 3 and "Traceback" not in "".join(err)
    with pytest.raises(UserError, match="max_sessions"):
        oe().make_app(release=str(release), max_sessions=0)


# Over a real server, with OpenEnv's clients --------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(process.stderr.read() if process.stderr else "the server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the server did not start")


@pytest.mark.slow
def test_openenv_clients_over_a_served_release_keep_concurrent_sessions_apart(release):
    from openenv.core import GenericEnvClient

    records = gridbench.load_release(release).filter(hidden_slots=[4], decoy_budgets=[3])
    port = _free_port()
    args = [sys.executable, "-m", "gridbench.adapters.openenv_env", f"release={release}", f"port={port}"]
    args += [f"failure_rate={RATE}", f"max_steps={MAX_STEPS}"]
    server = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        _wait(port, server)

        async def play(record, client_class) -> tuple[list, dict, dict]:
            moves = scripted_moves(record)
            async with client_class(base_url=f"http://127.0.0.1:{port}") as env:
                reset = await env.reset(task_id=record.task_id, episode_seed=0)
                observation = reset.observation
                task_id = observation["task_id"] if isinstance(observation, dict) else observation.task_id
                assert task_id == record.task_id
                results = []
                for name, arguments in moves:
                    action = {"name": name, "arguments": arguments}
                    if client_class is oe().GridbenchClient:
                        action = oe().GridAction(**action)
                    step = await env.step(action)
                    obs = step.observation
                    results.append(obs["result"] if isinstance(obs, dict) else obs.result)
                    await asyncio.sleep(0)  # let the other session step in between
                state = await env.state()
                state = state if isinstance(state, dict) else state.model_dump()
                score = obs["score"] if isinstance(obs, dict) else obs.score
                return results, {**score, "reward": step.reward, "done": step.done}, state

        async def both():
            return await asyncio.gather(
                play(records[0], GenericEnvClient), play(records[1], oe().GridbenchClient)
            )

        played = asyncio.run(both())
    finally:
        server.terminate()
        server.wait(30)
    for record, (results, score, state) in zip(records, played, strict=True):
        expected, graded = direct(record, scripted_moves(record))
        assert results == expected, record.task_id
        assert score["done"] and score["reward"] == float(graded["success"])
        assert score["fraction_correct"] == graded["fraction_correct"]
        assert state["task_id"] == record.task_id and state["step_count"] == len(expected)


@pytest.mark.slow
def test_an_openenv_server_on_an_adaptive_source_climbs_as_episodes_are_solved():
    import uvicorn
    from openenv.core import GenericEnvClient

    source = AdaptiveSource(["toy", "course"], seed=0, ladder=TOY_LADDER, window=2, workers=1, prefetch=2)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(oe().make_app(tasks=source), host="127.0.0.1", port=port, log_level="critical")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _wait(port)

        async def solve_one() -> tuple[float, int]:
            async with GenericEnvClient(base_url=f"http://127.0.0.1:{port}") as env:
                await env.reset()
                state = await env.state()
                item = next(i for i in _handed(source) if i.task_id == state["task_id"])
                for name, arguments in solving_moves(item):
                    step = await env.step({"name": name, "arguments": arguments})
                return step.reward, state["level"]

        async def rounds():
            out = []
            for _ in range(2):
                out += await asyncio.gather(solve_one(), solve_one())
            return out

        played = asyncio.run(rounds())
    finally:
        server.should_exit = True
        thread.join(30)
        source.close()
    assert [reward for reward, _ in played] == [1.0] * 4
    assert [level for _, level in played] == [0, 0, 1, 1]
    assert source.level == 1 and source.stats()["reported"] == 4 and not source.pending


def _handed(source: AdaptiveSource) -> list:
    """The tasks the source handed out (regenerated from their keys: the test's oracle)."""
    from gridbench.adaptive.tasks import make_task

    return [
        make_task(source._job(level, k))
        for level in range(len(source.ladder))
        for k in range(source.counters[level])
    ]


def test_a_bad_reset_over_plain_http_is_a_422_naming_it(release):
    """Interop round 7: POST /reset with an unknown task_id answered 500 (a traceback in the
    server's log); the WebSocket path already said it in one line."""
    from starlette.testclient import TestClient

    client = TestClient(oe().make_app(release=str(release)), raise_server_exceptions=False)
    reply = client.post("/reset", json={"task_id": "nope"})
    assert reply.status_code == 422 and "task_id='nope' is not a task" in reply.json()["detail"], reply.text
    assert client.post("/reset", json={"seed": 0}).status_code == 200


def test_the_adapter_imports_openenv_without_its_web_ui():
    """OpenEnv's server package imports Gradio (seconds) for a web UI the adapter never serves:
    a fresh interpreter importing the adapter has not imported Gradio, the package's two web
    names wait for their first use, and any other missing name is still an AttributeError."""
    code = (
        "import sys, gridbench.adapters.openenv_env\n"
        "assert 'gradio' not in sys.modules, 'gradio imported'\n"
        "import openenv.core.env_server as server\n"
        "assert not {'create_web_interface_app', 'WebInterfaceManager'} & set(vars(server))\n"
        "assert not any('gridbench' in type(f).__module__ for f in sys.meta_path)\n"
        "try:\n    server.no_such_name\nexcept AttributeError:\n    print('ok')\n"
    )
    _in_a_fresh_interpreter(code)


def _in_a_fresh_interpreter(code: str) -> None:
    """Run ``code`` in a new Python process (nothing of this one imported); it prints ``ok``."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.slow  # imports Gradio
def test_openenv_s_web_names_still_load_when_asked():
    """After the adapter's import, ``openenv.core.env_server``'s two web names are OpenEnv's own
    (its web interface and Gradio imported then), as they were before; and a thread that
    imports the web interface while the adapter imports the package gets it (the held-back
    import is refused only to the adapter's thread)."""
    code = (
        "import sys, threading, time\n"
        "got = {}\n"
        "def web():\n"
        "    time.sleep(0.2)\n"
        "    from openenv.core.env_server.web_interface import WebInterfaceManager\n"
        "    got['web'] = WebInterfaceManager\n"
        "other = threading.Thread(target=web)\n"
        "other.start()\n"
        "import gridbench.adapters.openenv_env\n"
        "other.join()\n"
        "import openenv.core.env_server as server\n"
        "from openenv.core.env_server.web_interface import WebInterfaceManager as direct\n"
        "assert got['web'] is direct and server.WebInterfaceManager is direct and 'gradio' in sys.modules\n"
        "assert server.create_web_interface_app.__module__ == direct.__module__\n"
        "print('ok')\n"
    )
    _in_a_fresh_interpreter(code)
