"""Every training front plays an episode as ``make eval`` does: the same tasks, the same scripted
model misbehaving at the same turns (the loopback server over real HTTP), the same injected
failures, played by the runner (``make eval agent=llm``), by verifiers' own evaluation loop
(its venv, its interception endpoint), by the validation callback's loop and through an
OpenEnv server (OpenEnv's client stepping the episode, the agent loop on the client's side),
give the same per-task results: score, steps, invalid and failed calls, and every count of
the agent loop. (The tool-level parity of the other adapters is test_parity.py's.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import gridbench
from gridbench.adapters.core import Session
from gridbench.agents.llm.loopback import LoopbackServer, Script, ScriptedPolicy
from tests import ROOT
from tests.adapters.test_loop_parity import COUNTS, FAULTS, KEY, RATE, via_runner

VF_PYTHON = ROOT / ".venv-verifiers" / "bin" / "python"
FRONTS = ("runner", "verifiers", "callback", "openenv")


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def serve(release: Path) -> LoopbackServer:
    return LoopbackServer(ScriptedPolicy(release), Script(at={("*", t): k for t, k in FAULTS.items()}))


def via_verifiers(release: Path, ids: list[str], out: Path) -> dict[str, dict[str, Any]]:
    if not VF_PYTHON.exists():
        pytest.skip("the verifiers venv is missing: make verifiers-env (make test-slow builds it)")
    faults = json.dumps({str(t): k for t, k in FAULTS.items()})
    args = [
        str(VF_PYTHON),
        "-m",
        "tests.adapters.verifiers_eval",
        str(release),
        str(out),
        str(RATE),
        ",".join(ids),
    ]
    done = subprocess.run([*args, faults], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(ids) and all(line["ok"] for line in lines), done.stdout[-2000:]
    for line in lines:  # the reward verifiers records is the episode's success
        assert line["reward"] == float(line["row"]["success"])
    return {line["row"]["task_id"]: line["row"] for line in lines}


def via_callback(release: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    from gridbench.adapters.validation import validate
    from gridbench.agents.llm.chat import openai_chat

    tasks = [r for r in gridbench.load_release(release) if r.task_id in ids]
    server = serve(release)
    url = server.start()
    try:
        _, rows = validate(tasks, openai_chat(url, "scripted", api_key=KEY), failure_rate=RATE)
    finally:
        server.stop()
    return {row["task_id"]: row for row in rows}


class RemoteEpisode:
    """An episode played on an OpenEnv server: the agent loop's view of it (``call``,
    ``finished``, ``truncated``, ``steps``), each call a ``step`` of OpenEnv's client; the
    prompt and tools are rendered from a local copy of the task (what the server sent)."""

    def __init__(self, local: Any, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.local, self.client, self.loop = local, client, loop
        self.finished = self.truncated = False
        self.steps = 0
        self.score: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    def call(self, name: Any, arguments: Any = None) -> dict[str, Any]:
        action = {"name": name, "arguments": arguments if isinstance(arguments, dict) else {}}
        if not isinstance(name, str) or (arguments is not None and not isinstance(arguments, dict)):
            return self.local.call(name, arguments)  # not an action OpenEnv's schema admits
        step = asyncio.run_coroutine_threadsafe(self.client.step(action), self.loop).result(60)
        self.steps += 1
        observation = step.observation
        if step.done:
            self.finished, self.score = True, observation["score"]
            self.truncated = bool(self.score["truncated"])
        return observation["result"]


def via_openenv(release: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    import socket

    import uvicorn
    from openenv.core import GenericEnvClient

    from gridbench.adapters.openenv_env import make_app
    from gridbench.agents.llm.chat import openai_chat, play_chat
    from gridbench.agents.llm.loop import LoopSettings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = make_app(release=str(release), failure_rate=RATE)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    threading.Thread(target=server.run, daemon=True).start()
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    model = serve(release)
    url = model.start()
    rows = {}
    try:
        while not server.started:
            threading.Event().wait(0.05)
        for record in [r for r in gridbench.load_release(release) if r.task_id in ids]:
            client = GenericEnvClient(base_url=f"http://127.0.0.1:{port}")
            run = lambda coro: asyncio.run_coroutine_threadsafe(coro, loop).result(60)  # noqa: E731
            run(client.connect())
            run(client.reset(task_id=record.task_id, episode_seed=0))
            local = Session(
                record.task, record.answer, gridbench.EnvSettings(failure_rate=RATE, max_steps=200)
            )
            episode = RemoteEpisode(local.episode, client, loop)
            outcome = play_chat(episode, openai_chat(url, "scripted", api_key=KEY), LoopSettings.from_llm())
            run(client.close())
            counts = {k: v for k, v in outcome.counters().items() if k != "api_error"}
            rows[record.task_id] = {"task_id": record.task_id, **episode.score, **counts}
    finally:
        model.stop()
        server.should_exit = True
        loop.call_soon_threadsafe(loop.stop)
    return rows


@pytest.mark.slow
def test_runner_verifiers_callback_and_openenv_give_the_same_per_task_results(release, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    held = gridbench.load_release(release).filter(hidden_slots=[4], decoy_budgets=[3])
    ids = [record.task_id for record in held]
    played = {
        "runner": {k: row for k, (row, _) in via_runner(release, ids, tmp_path / "runs").items()},
        "verifiers": via_verifiers(release, ids, tmp_path / "verifiers"),
        "callback": via_callback(release, ids),
        "openenv": via_openenv(release, ids),
    }
    table = []
    for task_id in ids:
        rows = {front: {k: played[front][task_id][k] for k in COUNTS} for front in FRONTS}
        table.append((task_id, rows))
        for front in FRONTS[1:]:
            assert rows[front] == rows["runner"], (task_id, front, rows[front], rows["runner"])
    # the faults were met on every front: text calls, malformed calls, reminders, a cut
    for _, rows in table:
        for column in ("text_tool_calls", "malformed_tool_calls", "reminders", "length_cuts"):
            assert rows["runner"][column] >= 1, column
    print(json.dumps(table, indent=1), file=sys.stderr)
