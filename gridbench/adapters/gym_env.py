"""The gymnasium environment ``gridbench/Grid-v0`` (registered by ``import gridbench.gym``).

    import gymnasium, gridbench.gym
    env = gymnasium.make("gridbench/Grid-v0", release=PATH, failure_rate=0.1)
    prompt, info = env.reset(seed=0)                     # info["tools"]: the JSON schemas
    text, reward, terminated, truncated, info = env.step(
        {"name": "set_slot", "arguments": {"row": 0, "col": 3, "id": "C1a2b3c"}})

An observation is text: the task prompt after ``reset``, the JSON text of the tool result
after ``step`` (what the LLM runner shows a model). An action is one tool call, a dict or its
JSON text; anything else is an invalid step, answered with an error observation. The
reward is 0 until the episode ends, then 1.0 for a solved grid (``reward="partial"``: the
fraction of hidden cells right). ``terminated`` when ``done`` was called, ``truncated`` when
``max_steps`` calls were made without it.
"""

from __future__ import annotations

import multiprocessing
import numbers
import string
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from gridbench.adapters.core import (
    Session,
    env_settings,
    item_session,
    partial_reward,
    result_text,
    task_source,
)
from gridbench_core.errors import UserError

OBSERVATION_LIMIT = 1_000_000  # characters
ACTION_LIMIT = 100_000


def _is_int(value: Any) -> bool:
    """An integer, numpy's included (a vector env hands out ``np.int64``), never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


class AnyText(spaces.Text):
    """Text of any characters (samples are printable ASCII): prompts and tool results hold
    whatever the task's names and an agent's echoed input hold."""

    def __init__(self, max_length: int) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=string.printable)

    def contains(self, x: Any) -> bool:
        """Any string of at most ``max_length`` characters."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


# gymnasium's async vector env (``shared_memory=True``, its default) keeps observations in shared
# memory, and for a ``Text`` space it (1.4) writes each character's index in the space's charset,
# so any other character fails in the worker, and it reads the buffer into strings once, when the
# vector env is made: every observation after that was the empty buffer, a million '0's. An
# ``AnyText`` buffer holds, per environment, the text's length and its code points, and is read
# as a view that decodes the buffer when indexed or copied (as gymnasium's arrays are views).


@create_shared_memory.register(AnyText)
def _create_any_text(space: AnyText, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@write_to_shared_memory.register(AnyText)
def _write_any_text(space: AnyText, index: int, value: str, shared_memory: Any) -> None:
    if not space.contains(value):
        raise ValueError(f"an observation of {len(value)} characters is over the limit of {space.max_length}")
    codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype="<i4")
    size = space.max_length + 1
    buffer = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    buffer[0] = len(codes)
    buffer[1 : 1 + len(codes)] = codes


class TextView(Sequence[str]):
    """The texts of a vector env's shared buffer, decoded when read: ``deepcopy`` (what the
    vector env returns by default) gives a tuple of them."""

    def __init__(self, space: AnyText, shared_memory: Any, n: int) -> None:
        self.size, self.n = space.max_length + 1, n
        self.buffer = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        if not -self.n <= index < self.n:
            raise IndexError(index)
        row = self.buffer[(index % self.n) * self.size : (index % self.n + 1) * self.size]
        return row[1 : 1 + int(row[0])].astype("<i4").tobytes().decode("utf-32-le", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self.n))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, TextView)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


@read_from_shared_memory.register(AnyText)
def _read_any_text(space: AnyText, shared_memory: Any, n: int = 1) -> TextView:
    return TextView(space, shared_memory, n)


class GridEnv(gym.Env[str, Any]):
    """One task per episode, from a release (filtered) or from any sequence of items with
    ``.task`` and ``.answer`` (``gridbench.create_dataset(...)``, ``load_release(...)``)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        release: str | None = None,
        tasks: Any = None,
        domains: Any = None,
        hidden_slots: Any = None,
        decoy_budgets: Any = None,
        failure_rate: float = 0.0,
        query_budget: str | int = "unlimited",
        check_budget: str | int = "unlimited",
        max_steps: int = 200,
        reward: str = "success",
        render_mode: str | None = None,
    ) -> None:
        self.partial = partial_reward(reward)
        if render_mode not in (None, "ansi"):
            raise UserError(f"render_mode={render_mode!r}: use None or 'ansi'")
        self.items = task_source(release, tasks, domains, hidden_slots, decoy_budgets)
        self.settings = env_settings(failure_rate, query_budget, check_budget, max_steps)
        self.render_mode = render_mode
        self.observation_space = AnyText(OBSERVATION_LIMIT)
        self.action_space = AnyText(ACTION_LIMIT)
        self.session: Session | None = None
        self.ended: str | None = None  # "terminated" or "truncated" once the episode has ended
        self._spec: Any = None

    @property
    def spec(self) -> Any:
        """The environment's ``EnvSpec``, with ``max_episode_steps`` the episode's step limit
        (the environment truncates there itself, so ``gymnasium.make`` adds no TimeLimit)."""
        if self._spec is None or self._spec.max_episode_steps == self.settings.max_steps:
            return self._spec
        from dataclasses import replace

        return replace(self._spec, max_episode_steps=self.settings.max_steps)

    @spec.setter
    def spec(self, value: Any) -> None:
        self._spec = value

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """A new episode. ``options``: ``index`` or ``task_id`` (a release's tasks) picks the
        task (else the seeded RNG does), ``episode_seed`` the seed of the injected failures
        (else the RNG's). A wrong option is a :class:`UserError` naming it."""
        super().reset(seed=seed)
        if options is not None and not isinstance(options, dict):
            raise UserError(f"options must be a dict, got {type(options).__name__}")
        options = dict(options or {})
        unknown = sorted(set(options) - {"index", "task_id", "episode_seed"})
        if unknown:
            raise UserError(f"unknown reset options {unknown[:5]}; use index, task_id, episode_seed")
        index = options.get("index")
        if "task_id" in options:
            index = self._index_of(options["task_id"])
        if index is None:
            index = int(self.np_random.integers(len(self.items)))
        elif not _is_int(index) or not 0 <= index < len(self.items):
            raise UserError(f"index={str(index)[:40]!r}: need an int in [0, {len(self.items)})")
        index = int(index)
        episode_seed = options.get("episode_seed")
        if episode_seed is None:
            episode_seed = int(self.np_random.integers(2**31))
        elif not _is_int(episode_seed) or episode_seed < 0:
            raise UserError(f"episode_seed={str(episode_seed)[:40]!r}: need an int >= 0")
        self.session = item_session(self.items, index, self.settings, int(episode_seed))
        self.ended = None
        messages = self.session.messages()
        prompt = f"{messages[0]['content']}\n\n{messages[1]['content']}"
        return prompt, self._info(messages=messages, tools=self.session.tools)

    def _index_of(self, task_id: Any) -> int:
        if hasattr(self.items, "domain_of"):  # a create_dataset: ids are known only once made
            raise UserError("task_id needs a release's tasks; with generated tasks use index")
        for i in range(len(self.items)):
            if getattr(self.items[i], "task_id", None) == task_id:
                return i
        raise UserError(f"task_id {str(task_id)[:80]!r} is not among the environment's tasks")

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One tool call; the reward is paid once, on the step that ends the episode. Steps
        after the end are answered with an error, a reward of 0 and the same end flags."""
        session = self.session
        if session is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        ended_before = self.ended
        result = session.act(action)
        if ended_before is None and (session.over or session.episode.steps >= self.settings.max_steps):
            done_called = session.over and not session.truncated
            self.ended = "terminated" if done_called else "truncated"
        # the result's status and message (its data is in the text): an info value keeps its type in
        # every step, so a vector env can stack the infos of environments that called different tools
        info = self._info(result={"status": str(result.get("status")), "message": str(result.get("message"))})
        reward = 0.0
        if self.ended is not None:
            info["score"] = {**session.score(), "truncated": self.ended == "truncated"}
            if ended_before is None:
                reward = session.reward(self.partial)
        return result_text(result), reward, self.ended == "terminated", self.ended == "truncated", info

    def _info(self, **extra: Any) -> dict[str, Any]:
        assert self.session is not None
        episode = self.session.episode
        return {
            "task_id": self.session.task_id,
            "domain": self.session.task.domain,
            "steps": episode.steps,
            **extra,
        }

    def render(self) -> str | None:
        """``ansi``: the grid as it is now, one row per line (``.`` for an empty cell)."""
        if self.render_mode != "ansi" or self.session is None:
            return None
        return "\n".join(" ".join(cell or "." for cell in row) for row in self.session.episode.grid)
