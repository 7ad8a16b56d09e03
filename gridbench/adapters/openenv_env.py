"""gridbench as an OpenEnv environment (``openenv-core``: ``pip install 'gridbench[openenv]'``).

    python -m gridbench.adapters.openenv_env release=outputs/releases/gridbench-v2.0.0 port=8000
    python -m gridbench.adapters.openenv_env adaptive=conf/adaptive/default.yaml port=8000

serves OpenEnv's HTTP/WebSocket server (``openenv.core.env_server.create_app``) on 127.0.0.1:
each WebSocket session (OpenEnv's ``EnvClient``, ``GenericEnvClient``, or
:class:`GridbenchClient` here) gets its own environment, so one session plays one episode at
a time and never sees another's. ``reset(seed=, task_id=, episode_seed=)`` starts an episode
and answers the task prompt with the tool schemas; ``step({"name": TOOL, "arguments": {...}})``
is one tool call, answered with the tool result's JSON text (the runner's); ``done`` is the
episode's end (``done`` called, or ``max_steps`` reached), with ``reward`` 1.0 for a solved grid
(``reward=partial``: the fraction right) and the score; ``state()`` says where the episode is.

The game is :class:`gridbench.adapters.core.Session`'s, as for every adapter. Tasks come from a
release, a ``create_dataset`` or an :class:`gridbench.AdaptiveSource` shared by the sessions
(:mod:`gridbench.adapters.feed`): with the adaptive source, each ended episode's reward is
reported to it, so the difficulty follows the policy being trained.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

# isort: split
import gridbench.adapters._openenv_web  # noqa: F401  # first: OpenEnv's server without its web UI

# isort: split
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from gridbench.adapters.core import Session, env_settings, item_session, partial_reward, result_text
from gridbench.adapters.feed import Feed
from gridbench.env import EnvSettings
from gridbench_core.errors import UserError


class GridAction(Action):  # type: ignore[misc]  # openenv ships no type hints
    """One tool call: the tool's name and its arguments (the episode checks them)."""

    name: str = Field(description="the tool to call, e.g. set_slot or done")
    arguments: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments")


class GridObservation(Observation):  # type: ignore[misc]  # openenv ships no type hints
    """What the agent reads: the prompt after ``reset``, a tool result's JSON text after ``step``
    (``result`` holds it parsed); the tools after ``reset``; the score once ``done``."""

    text: str = ""
    result: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task_id: str = ""
    score: dict[str, Any] | None = None


class GridState(State):  # type: ignore[misc]  # openenv ships no type hints
    """Where the episode is: its task, the steps taken, whether it has ended, and its level when
    an adaptive source handed the task out."""

    task_id: str = ""
    domain: str = ""
    hidden_slots: int = 0
    decoy_budget: int = 0
    level: int | None = None
    finished: bool = False
    truncated: bool = False


class GridbenchEnvironment(Environment[GridAction, GridObservation, GridState]):  # type: ignore[misc]  # openenv ships no type hints
    """One session's environment over a shared :class:`Feed` (OpenEnv makes one per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, feed: Feed, settings: EnvSettings | None = None, partial: bool = False) -> None:
        super().__init__()
        self.feed, self.settings, self.partial = feed, settings or EnvSettings(), partial
        self.session: Session | None = None
        self.item: Any = None
        self._state = GridState()
        self._reported = True

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        episode_seed: int | None = None,
        **kwargs: Any,
    ) -> GridObservation:
        """Start an episode (the previous one, unfinished, is abandoned): the task prompt."""
        self._finish(None)
        item = self.feed.take(seed, task_id)
        session = item_session(
            [item], 0, self.settings, episode_seed if episode_seed is not None else seed or 0
        )
        self.session, self.item, self._reported = session, item, False
        self._state = GridState(
            episode_id=episode_id or str(uuid.uuid4()),
            task_id=session.task_id,
            domain=session.task.domain,
            hidden_slots=session.task.hidden_slots,
            decoy_budget=session.task.decoy_budget,
            level=getattr(item, "level", None) if self.feed.adaptive else None,
        )
        system, user = session.messages()
        return GridObservation(
            text=f"{system['content']}\n\n{user['content']}",
            tools=session.tools,
            task_id=session.task_id,
            reward=0.0,
        )

    def step(self, action: GridAction, timeout_s: float | None = None, **kwargs: Any) -> GridObservation:
        """One tool call on the episode; ``done`` with the reward and score at its end."""
        if self.session is None:
            message = "reset() was not called: start an episode first"
            result = {"status": "error", "message": message, "data": None}
            return GridObservation(text=result_text(result), result=result, reward=0.0)
        if self.session.over:
            result = {"status": "error", "message": "the episode has ended; call reset()", "data": None}
            return GridObservation(
                text=result_text(result), result=result, task_id=self.session.task_id, done=True, reward=0.0
            )
        result = self.session.call(action.name, action.arguments)
        self._state.step_count += 1
        done = self.session.over
        reward = self.session.reward(self.partial) if done else 0.0
        score = None
        if done:
            score = self.session.score()
            self._finish(reward)
        self._state.finished, self._state.truncated = done, self.session.truncated
        return GridObservation(
            text=result_text(result),
            result=result,
            task_id=self.session.task_id,
            done=done,
            reward=reward,
            score=score,
        )

    @property
    def state(self) -> GridState:
        """The episode's state (task, steps, ended)."""
        return self._state

    def _finish(self, reward: float | None) -> None:
        """Give the episode's task back to the feed once: its reward, or None if unfinished."""
        if not self._reported and self.item is not None:
            self._reported = True
            self.feed.give_back(self.item, reward)

    def close(self) -> None:
        """The session ends: an unfinished episode is abandoned (it moves no difficulty)."""
        self._finish(None)

    def get_metadata(self) -> EnvironmentMetadata:
        """The environment's name and what it is."""
        return EnvironmentMetadata(
            name="gridbench",
            description="Certified grid-planning tasks: fill the hidden cells with tool calls",
            version="1",
        )


class GridbenchClient(EnvClient[GridAction, GridObservation, GridState]):  # type: ignore[misc]  # openenv ships no type hints
    """OpenEnv's WebSocket client, typed for gridbench (``GridbenchClient(base_url=URL)``)."""

    def _step_payload(self, action: GridAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GridObservation]:
        data = dict(payload.get("observation", {}))
        observation = GridObservation(**data, done=payload.get("done", False), reward=payload.get("reward"))
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> GridState:
        return GridState(**payload)


def make_app(
    release: Any = None,
    tasks: Any = None,
    domains: Any = None,
    hidden_slots: Any = None,
    decoy_budgets: Any = None,
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 200,
    reward: str = "success",
    max_sessions: int = 64,
) -> Any:
    """OpenEnv's FastAPI app over gridbench episodes: ``release=PATH`` (filtered) or ``tasks=``
    (a ``create_dataset``, or a ``gridbench.AdaptiveSource`` the sessions share)."""
    feed = Feed.of(release, tasks, domains, hidden_slots, decoy_budgets)
    settings = env_settings(failure_rate, query_budget, check_budget, max_steps)
    partial = partial_reward(reward)
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or not 1 <= max_sessions <= 10_000:
        raise UserError(f"max_sessions={max_sessions!r}: need a whole number in 1..10000")

    def factory() -> GridbenchEnvironment:
        return GridbenchEnvironment(feed, settings, partial)

    app = create_app(
        factory, GridAction, GridObservation, env_name="gridbench", max_concurrent_envs=max_sessions
    )

    async def refused(request: Any, error: Exception) -> Any:
        # a bad reset over plain HTTP (an unknown task_id): 422 with the one line, as the
        # WebSocket path says it, not a 500 and a traceback in the server's log
        from fastapi.responses import JSONResponse

        return JSONResponse(status_code=422, content={"detail": str(error)})

    app.add_exception_handler(UserError, refused)
    return app


OPTIONS = (
    "release",
    "adaptive",
    "port",
    "failure_rate",
    "query_budget",
    "check_budget",
    "max_steps",
    "reward",
)


def main(argv: list[str]) -> int:
    """``python -m gridbench.adapters.openenv_env release=PATH|adaptive=PATH [port=8000] ...``:
    serve on 127.0.0.1 until Ctrl-C. A wrong option is one ``error:`` line, exit 2."""
    try:
        options = dict(arg.split("=", 1) for arg in argv if "=" in arg)
        unknown = sorted(set(options) - set(OPTIONS)) + [a for a in argv if "=" not in a]
        if unknown:
            raise UserError(f"{unknown[0]}: unknown option; the options are {', '.join(OPTIONS)} (key=value)")
        port = options.pop("port", "8000")
        if not port.isdigit() or not 0 <= int(port) <= 65535:
            raise UserError(f"port={port[:20]!r}: need a port number")
        tasks = _adaptive(options.pop("adaptive")) if "adaptive" in options else None
        extra: dict[str, Any] = dict(options)
        app = make_app(tasks=tasks, **extra)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import uvicorn

    print(f"gridbench OpenEnv server at http://127.0.0.1:{port} (WebSocket /ws)", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    return 0


def _adaptive(path: str) -> Any:
    """The adaptive source of a config file (``conf/adaptive/default.yaml``'s keys)."""
    from pathlib import Path

    import yaml

    from gridbench.adaptive import from_config

    file = Path(path)
    if not file.is_file() or file.stat().st_size > 1_000_000:
        raise UserError(f"adaptive={path[:200]}: not a config file (conf/adaptive/default.yaml is one)")
    try:
        config = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise UserError(f"adaptive={path[:200]}: not YAML ({str(error)[:100]})") from None
    if not isinstance(config, dict):
        raise UserError(f"adaptive={path[:200]}: give a mapping of AdaptiveSource arguments")
    return from_config(config)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = [
    "GridAction",
    "GridObservation",
    "GridState",
    "GridbenchClient",
    "GridbenchEnvironment",
    "make_app",
]
