"""The episode core every adapter plays through.

A :class:`Session` is one task being played: an :class:`env.Episode` (budgets, failure
injection, argument validation, the step limit), the task's prompt, its tool schemas, the
text a tool result is shown as, and its score. Inspect, MCP, gymnasium and TRL only translate
between their own call conventions and :meth:`Session.call`; none of them decides anything
about the game, so a task scores the same whichever way it is played.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gridbench.env import EnvSettings, Episode, openai_schemas
from gridbench.env.scoring import score_episode as episode_stats
from gridbench.env.scoring import score_grid, solve_truth
from gridbench.scoring import answer_of, task_of
from gridbench_core.errors import UserError
from gridbench_core.task import Answer, Task

MAX_ACTION_CHARS = 1_000_000  # an action's JSON text: a tool call is a few hundred characters
ACTION_HELP = 'an action is one tool call: {"name": TOOL, "arguments": {...}} (a JSON object or its text)'


def result_text(result: Mapping[str, Any]) -> str:
    """A tool result as the model reads it: the JSON text the LLM runner sends, too."""
    return json.dumps(result, ensure_ascii=False, default=str)


class Session:
    """One task played through an adapter: the episode, its prompt, tools and score."""

    def __init__(
        self,
        task: Mapping[str, Any] | Task,
        answer: Mapping[str, Any] | Answer | None = None,
        settings: EnvSettings | None = None,
        seed: int = 0,
        templates: Any = None,
    ) -> None:
        self.task = task_of(task)
        self.answer = None if answer is None else answer_of(answer)
        self.episode = Episode(self.task, settings or EnvSettings(), seed=seed)
        self.tools: list[dict[str, Any]] = openai_schemas(self.task.domain)
        self.tool_names = [tool["function"]["name"] for tool in self.tools]
        self._templates = templates
        self._truth: dict[tuple[int, int], str] | None = None

    @property
    def task_id(self) -> str:
        """The task's id."""
        return self.task.task_id

    @property
    def over(self) -> bool:
        """Whether the episode has ended (``done`` was called, or the step limit passed)."""
        return self.episode.finished

    @property
    def truncated(self) -> bool:
        """Whether the episode ended on the step limit rather than on ``done``."""
        return self.episode.truncated

    def messages(self) -> list[dict[str, str]]:
        """The system and first user message, rendered as the LLM runner renders them."""
        from gridbench.agents.llm.prompt import load_templates, render

        templates = self._templates or load_templates()
        return render(templates, self.episode)

    def call(self, name: Any, arguments: Any = None) -> dict[str, Any]:
        """One tool call on the episode (never raises)."""
        return self.episode.call(name, arguments)

    def act(self, action: Any) -> dict[str, Any]:
        """One tool call given as an action: a dict or JSON text ``{"name", "arguments"}`` (an
        OpenAI ``tool_call`` or its ``function`` works too). Anything else is an invalid step."""
        call = parse_action(action)
        if isinstance(call, str):
            return self.episode.reject(call, action)
        return self.call(*call)

    def truth(self) -> dict[tuple[int, int], str]:
        """The truth of every hidden cell: from the answer, or from solving the task."""
        if self._truth is None:
            self._truth = self.answer.truth_choice() if self.answer is not None else solve_truth(self.task)
        return self._truth

    def score(self) -> dict[str, Any]:
        """``success``, ``fraction_correct``, ``wrong_cells`` of the grid as it is now (the same
        scoring as ``gridbench.score``), with what the episode spent."""
        graded = score_grid(self.episode.grid, self.truth())
        if self.answer is not None:
            stats = episode_stats(self.episode, self.answer)
        else:
            stats = {
                "steps": self.episode.steps,
                "invalid_calls": self.episode.invalid,
                "failed_calls": self.episode.failures,
                "finished": self.episode.finished,
            }
        return {**stats, **graded, "truncated": self.episode.truncated}

    # what :meth:`score` says that an agent may read while it plays (nothing about the truth)
    SPENT = (
        "steps",
        "invalid_calls",
        "failed_calls",
        "queries_used",
        "checks_used",
        "calls",
        "finished",
        "truncated",
    )

    def progress(self) -> dict[str, Any]:
        """:meth:`score` while the episode runs: what it spent, and no grading (``success``,
        ``fraction_correct``, ``wrong_cells`` and the decoy counts are None until it is over),
        since a grade read after each move is an oracle of the truth, cell by cell. Once the
        episode is over this is :meth:`score`."""
        score = self.score()
        if self.over:
            return score
        return {key: (value if key in self.SPENT else None) for key, value in score.items()}

    def end(self) -> None:
        """End the episode where it stands, as ``done`` would, without counting a call (a
        trainer reads the reward here: a grade read mid-episode would be an oracle)."""
        self.episode.finished = True

    def reward(self, partial: bool = False) -> float:
        """1.0 for a solved grid, else 0.0; with ``partial`` the fraction of hidden cells right."""
        graded = score_grid(self.episode.grid, self.truth())
        return float(graded["fraction_correct"] if partial else graded["success"])


def parse_action(action: Any) -> tuple[str, Any] | str:
    """``(name, arguments)`` of an action, or a message saying why it is not a tool call."""
    if isinstance(action, str | bytes | bytearray) and len(action) > MAX_ACTION_CHARS:
        return f"the action is {len(action)} characters long (at most {MAX_ACTION_CHARS}); {ACTION_HELP}"
    if isinstance(action, bytes | bytearray):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except (ValueError, RecursionError):
            return f"the action is not JSON (or is nested too deep); {ACTION_HELP}"
    if isinstance(action, Mapping) and isinstance(action.get("function"), Mapping):
        action = action["function"]  # an OpenAI tool_call
    if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
        return f"the action has no tool name; {ACTION_HELP}"
    extra = sorted(set(action) - {"name", "arguments", "id", "type"})
    if extra:
        return f"the action has unknown keys {extra[:5]}; {ACTION_HELP}"
    return action["name"], action.get("arguments")


# Selecting the tasks of a release -------------------------------------------------------


def values(value: Any, name: str, kind: type) -> list[Any] | None:
    """A filter given as a list, a single value or a comma-separated string (as command lines
    pass them), or None; wrong values are a :class:`UserError` naming the option."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.strip("[]").split(",") if part.strip()]
    elif not isinstance(value, list | tuple | range | set):
        value = [value]
    out: list[Any] = []
    for item in value:
        try:
            if kind is int:
                if isinstance(item, bool) or (isinstance(item, float) and not item.is_integer()):
                    raise ValueError
                out.append(int(item))
            else:
                if not isinstance(item, str) or not item:
                    raise ValueError
                out.append(item)
        except (TypeError, ValueError):
            raise UserError(
                f"{name}={value!r}: give a list of {kind.__name__}s (or a comma-separated string)"
            ) from None
    return out


def select(
    release: str | Path,
    domains: Any = None,
    hidden_slots: Any = None,
    decoy_budgets: Any = None,
    task_ids: Any = None,
) -> Sequence[Any]:
    """The records of the release at ``release`` with those domains, H, B and task ids; a filter
    that leaves nothing is an error that lists what the release holds."""
    from gridbench.release import load_release

    if not release:
        raise UserError("release=PATH is required: the folder written by `make release`")
    whole = load_release(release)
    chosen = whole.filter(
        values(domains, "domains", str),
        values(hidden_slots, "hidden_slots", int),
        values(decoy_budgets, "decoy_budgets", int),
    ).records
    ids = values(task_ids, "task_ids", str)
    if ids is not None:
        unknown = sorted(set(ids) - {r.task_id for r in whole.records})
        if unknown:
            raise UserError(f"task_ids: {unknown[:5]} are not tasks of {whole.path.name}")
        chosen = [r for r in chosen if r.task_id in set(ids)]
    if not chosen:
        held = whole.records
        raise UserError(
            f"no task of {whole.path.name} matches the filters; it holds domains "
            f"{sorted({r.domain for r in held})}, H {sorted({r.hidden_slots for r in held})}, "
            f"B {sorted({r.decoy_budget for r in held})}"
        )
    return chosen


def task_source(
    release: str | Path | None, tasks: Any, domains: Any, hidden_slots: Any, decoy_budgets: Any
) -> Any:
    """The tasks an environment plays: a release's records (filtered) or ``tasks``, any
    non-empty sequence of items with ``.task`` and ``.answer`` (a ``create_dataset``)."""
    if (release is None) == (tasks is None):
        raise UserError("give release=PATH or tasks=... (e.g. gridbench.create_dataset(...)), not both")
    items = list(select(release, domains, hidden_slots, decoy_budgets)) if release is not None else tasks
    if (
        isinstance(items, str | bytes | Mapping)
        or not hasattr(items, "__getitem__")
        or not hasattr(items, "__len__")
    ):
        raise UserError(
            f"tasks= must be a sequence of items with .task and .answer, got {type(items).__name__}"
        )
    if not len(items):
        raise UserError("tasks= is empty; give a non-empty sequence of items with .task and .answer")
    if not hasattr(items, "domain_of"):  # a create_dataset makes its items on demand: they are
        for index in range(len(items)):  # right by construction; anything else is looked at
            if not _is_item(items[index]):
                raise UserError(
                    f"tasks[{index}] is {type(items[index]).__name__}, not an item with .task and "
                    ".answer (a release record or a gridbench.create_dataset(...) item)"
                )
    return items


def _is_item(item: Any) -> bool:
    """Whether ``item`` offers ``.task`` and ``.answer``, looked up without computing them (a
    release record reads its files when asked)."""
    kind = type(item)
    declared = getattr(kind, "__dataclass_fields__", {})
    own = getattr(item, "__dict__", {})
    return all(name in declared or name in own or hasattr(kind, name) for name in ("task", "answer"))


def item_session(items: Any, index: int, settings: EnvSettings, seed: int) -> Session:
    """The session of ``items[index]``; an item whose task or answer is not a file's dict is
    one line naming it."""
    item = items[index]
    try:
        task, answer = item.task, item.answer
    except UserError:
        raise
    except Exception as error:  # a user's item whose properties fail
        raise UserError(f"tasks[{index}]: its .task or .answer failed ({type(error).__name__})") from None
    return Session(task, answer, settings, seed=seed)


def partial_reward(reward: str) -> bool:
    """Whether ``reward`` asks for the fraction right (``partial``) rather than success."""
    if reward not in ("success", "partial"):
        raise UserError(f"reward={reward!r}: use 'success' or 'partial'")
    return reward == "partial"


def env_settings(
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 1_000_000,
    **extra: Any,
) -> EnvSettings:
    """:class:`EnvSettings` from adapter options (numbers may come as strings)."""

    def budget(value: Any) -> Any:  # checked by EnvSettings
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value

    try:
        settings = EnvSettings(
            query_budget=budget(query_budget),
            check_budget=budget(check_budget),
            failure_rate=float(failure_rate),
            max_steps=int(max_steps),
            **extra,
        )
    except (TypeError, ValueError, OverflowError) as error:
        raise UserError(f"episode settings: {str(error)[:200]}") from None
    settings.validate()
    return settings


def records_of(items: Iterable[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(task, answer)`` dicts of release records or generated tasks."""
    return [(item.task, item.answer) for item in items]
