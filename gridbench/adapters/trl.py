"""Environments for TRL's ``environment_factory`` (``GRPOTrainer``, multi-turn tool use).

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from gridbench.adapters.trl import environments

    rows, factories = environments(release="outputs/releases/gridbench-v2.0.0")
    # or, certified tasks made on the fly: environments(tasks=gridbench.create_dataset(...))
    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", train_dataset=Dataset.from_list(rows),
                          environment_factory=factories, args=GRPOConfig(...))
    trainer.train()

TRL's contract (``trl/trainer/grpo_trainer.py``): one instance per rollout; ``reset(**row)``
before generation, whose string is appended to the row's last user message; every public
method is a tool, named after the method, described to the model by
``transformers.utils.get_json_schema`` (type hints and a Google docstring), and called as
``method(**arguments)``; ``get_reward()`` scores the finished rollout (TRL 1.8 and later; before
1.8 it is a tool too, and ends the episode when called as one). Tool names carry the
domain (``query_course_candidate_from_attribute``), so there is one environment class per
domain and the factories are a dict keyed by the rows' ``environment`` field.

Every method forwards its arguments unchanged to :meth:`Session.call`: a missing, extra or
ill-typed argument is answered and counted by the episode, as everywhere else.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

from gridbench.adapters.core import (
    Session,
    env_settings,
    item_session,
    partial_reward,
    result_text,
    task_source,
)
from gridbench.env import EnvSettings
from gridbench.env.tools import Param, tools_for
from gridbench_core.errors import UserError

PYTHON_TYPES: dict[str, Any] = {
    "integer": int,
    "string": str,
    "id_or_null": Optional[str],  # noqa: UP045 (a runtime type for get_json_schema)
    "id_list": list[str],
    "value": Union[int, str, list[str]],  # noqa: UP007
}


class GridbenchEnvironment:
    """The base of the per-domain environments: ``reset``, ``get_reward`` and the episode.
    Subclasses (made by :func:`environment_class`) add the domain's tools as methods."""

    items: Sequence[Any] = ()
    settings: EnvSettings = EnvSettings()
    partial: bool = False
    source: Any = None  # an AdaptiveGroups over a gridbench.AdaptiveSource: reset() joins a row's task

    def __init__(self) -> None:
        self.session: Session | None = None
        self._handed: Any = None  # the adaptive group this rollout is in, until its reward is handed in

    def reset(self, task_index: int = 0, episode_seed: int = 0, **row: Any) -> str:
        """Start the rollout on item ``task_index``; returns the task prompt (system rules and
        the task), which TRL appends to the row's user message. A row's ``task_id``, when it
        has one, must be that item's: a row that names another task is refused, never played
        as the task at its index."""
        for name, value in (("task_index", task_index), ("episode_seed", episode_seed)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UserError(f"{name}={str(value)[:40]!r}: need an int >= 0 (a row of environments())")
        if self.source is not None:
            return self._reset_adaptive(task_index, episode_seed)
        if task_index >= len(self.items):
            raise UserError(f"task_index={task_index}: the environment has {len(self.items)} tasks")
        session = item_session(self.items, task_index, self.settings, episode_seed)
        wanted = row.get("task_id")
        if wanted is not None and wanted != session.task_id:
            raise UserError(
                f"task_id={str(wanted)[:80]!r} is not the task at task_index={task_index} "
                f"({session.task_id}); pass a row of environments() unchanged"
            )
        self.session = session
        system, user = self.session.messages()
        return f"{system['content']}\n\n{user['content']}"

    def _reset_adaptive(self, group: int, episode_seed: int) -> str:
        """Start the rollout on the task of row ``group`` (see :class:`AdaptiveGroups`); a
        membership this instance held and never rewarded is withdrawn first."""
        if self._handed is not None:
            self.source.withdraw(self._handed)
        self._handed = self.source.join(group)
        self.session = item_session([self._handed.item], 0, self.settings, episode_seed)
        system, user = self.session.messages()
        return f"{system['content']}\n\n{user['content']}"

    def get_reward(self) -> float:
        """1.0 for a solved grid, else 0.0 (``partial``: the fraction of hidden cells right);
        with an adaptive source, the first call also hands it to the rollout's group, which
        reports the group's mean to the source once every rollout of the group is in. It ends
        the episode first: TRL before 1.8 makes every public method but ``reset`` a tool, so a
        model could call this one mid-rollout, and a grade it could read after each move would
        tell it the truth cell by cell; called as a tool it is ``done``, and the rollout's
        reward is what it returned."""
        if self.session is not None:
            self.session.end()
        reward = 0.0 if self.session is None else self.session.reward(self.partial)
        if self._handed is not None:
            self.source.reward(self._handed, reward)
            self._handed = None
        return reward

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.session is None:
            return result_text({"status": "error", "message": "reset() was not called", "data": None})
        return result_text(self.session.call(name, arguments))


def _method(name: str, description: str, params: Sequence[Param]) -> Callable[..., str]:
    """A tool method: the signature and docstring TRL reads, the arguments passed through."""

    def method(self: GridbenchEnvironment, *args: Any, **kwargs: Any) -> str:
        if len(args) > len(params):
            if self.session is None:
                return self._call(name, {})
            message = f"{name} takes {len(params)} arguments, got {len(args)} positional ones"
            return result_text(self.session.episode.reject(message, args))
        arguments = dict(zip([p.name for p in params], args, strict=False)) | kwargs
        return self._call(name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for param in params:
        annotation = PYTHON_TYPES[param.kind]
        parameters.append(
            inspect.Parameter(param.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
        )
        annotations[param.name] = annotation
        choices = f" (choices: {json.dumps(list(param.choices))})" if param.choices else ""
        lines.append(f"    {param.name}: {param.description}{choices}")
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**annotations, "return": str}
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    return method


def environment_class(domain: str) -> type[GridbenchEnvironment]:
    """The environment class of ``domain``: the base with its tools as methods."""
    methods = {
        tool.name: _method(tool.name, tool.description, tool.params) for tool in tools_for(domain).values()
    }
    return type(f"Gridbench_{domain}", (GridbenchEnvironment,), methods)


def environments(
    release: str | None = None,
    tasks: Sequence[Any] | None = None,
    domains: Any = None,
    hidden_slots: Any = None,
    decoy_budgets: Any = None,
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 200,
    reward: str = "success",
    trials: int = 1,
    group_size: int = 1,
) -> tuple[list[dict[str, Any]], dict[str, Callable[[], GridbenchEnvironment]]]:
    """Dataset rows and the ``environment_factory`` dict for ``GRPOTrainer``: one row per task
    and trial (``prompt``, ``environment`` = the domain, ``task_index``, ``episode_seed``,
    ``task_id`` when known), one factory per domain. ``tasks`` may be a
    ``gridbench.create_dataset(...)``: its tasks are then generated when a rollout first asks;
    or a ``gridbench.AdaptiveSource`` of one domain: then ``trials`` rows, the rollouts of a row
    (``group_size``: set it to GRPOConfig's ``num_generations``) on one task of the source, whose
    mean reward goes back to the source (:class:`AdaptiveGroups`). Other arguments but the
    episode settings and ``reward`` are for a fixed set."""
    partial = partial_reward(reward)
    if not isinstance(trials, int) or trials < 1:
        raise UserError(f"trials={trials!r}: need an int >= 1")
    from gridbench.adaptive import AdaptiveSource

    if isinstance(tasks, AdaptiveSource):
        settings = env_settings(failure_rate, query_budget, check_budget, max_steps)
        return _adaptive(tasks, settings, partial, trials, group_size)
    items = task_source(release, tasks, domains, hidden_slots, decoy_budgets)
    settings = env_settings(failure_rate, query_budget, check_budget, max_steps)
    rows, used = [], set()
    for index in range(len(items)):
        if hasattr(items, "domain_of"):
            domain, task_id = items.domain_of(index), None
        else:
            domain, task_id = items[index].task["domain"], items[index].task["task_id"]
        used.add(domain)
        for trial in range(trials):
            rows.append(
                {
                    "prompt": [{"role": "user", "content": ""}],
                    "environment": domain,
                    "task_index": index,
                    "episode_seed": trial,
                    "task_id": task_id,
                }
            )
    factories: dict[str, Callable[[], GridbenchEnvironment]] = {}
    for domain in sorted(used):
        cls = type(
            f"Gridbench_{domain}",
            (environment_class(domain),),
            {"items": items, "settings": settings, "partial": partial},
        )
        factories[domain] = cls
    return rows, factories


class _Membership:
    """One rollout's place in a group: the group and its task."""

    def __init__(self, group: _Group) -> None:
        self.group = group
        self.item = group.item


class _Group:
    """The rollouts of one row sharing one task: how many joined, their rewards."""

    def __init__(self, item: Any) -> None:
        self.item = item
        self.joined = 0
        self.rewards: list[float] = []


class AdaptiveGroups:
    """An adaptive source shared by the environments of one factory, in groups: GRPO plays
    each row ``num_generations`` times and compares the rollouts of a row with each other, so
    the rollouts of a row must play the same task. The first rollout to reset with a row draws
    the source's next task; the next ``group_size - 1`` resets with that row join it; once the
    group's ``group_size`` rewards are in, their mean is reported to the source (the task's
    success rate), and the row's next reset draws a new task. A rollout reset again before its
    reward leaves its group (a group left by all before any reward is abandoned: it moves
    nothing). Thread-safe."""

    def __init__(self, source: Any, group_size: int) -> None:
        self.source = source
        self.group_size = group_size
        self.open: dict[int, _Group] = {}  # row -> the group still taking rollouts
        self._lock = threading.Lock()

    def join(self, row: int) -> _Membership:
        """A place for one rollout of ``row``: in its open group, or a new one."""
        with self._lock:
            group = self.open.get(row)
            if group is None:
                group = self.open[row] = _Group(self.source.next())
            group.joined += 1
            if group.joined >= self.group_size:
                del self.open[row]
            return _Membership(group)

    def withdraw(self, member: _Membership) -> None:
        """A rollout leaves its group before its reward."""
        with self._lock:
            group = member.group
            group.joined -= 1
            if group.joined == 0 and not group.rewards:
                self.source.abandon(group.item)
                self.open = {row: g for row, g in self.open.items() if g is not group}
            else:
                self._settle(group)

    def reward(self, member: _Membership, reward: float) -> None:
        """A rollout's reward; the group's mean goes to the source once all are in."""
        with self._lock:
            member.group.rewards.append(reward)
            self._settle(member.group)

    def _settle(self, group: _Group) -> None:
        """Report a full group whose rollouts are all rewarded (or withdrawn)."""
        closed = all(g is not group for g in self.open.values())
        if closed and group.rewards and len(group.rewards) >= group.joined:
            self.source.report(group.item, sum(group.rewards) / len(group.rewards))
            group.rewards, group.joined = [], -1  # reported: nothing more counts


def _adaptive(
    source: Any, settings: EnvSettings, partial: bool, rollouts: int, group_size: int
) -> tuple[list[dict[str, Any]], dict[str, Callable[[], GridbenchEnvironment]]]:
    """Rows and the factory of an adaptive source: tool names carry the domain, so one domain;
    row ``i`` has ``task_index`` ``i`` (its group) and ``episode_seed`` ``i``."""
    if len(source.domains) != 1:
        raise UserError(
            f"an AdaptiveSource for TRL needs one domain (tool names carry it), got {list(source.domains)}; "
            "make one source per domain"
        )
    if isinstance(group_size, bool) or not isinstance(group_size, int) or not 1 <= group_size <= 1024:
        raise UserError(f"group_size={str(group_size)[:40]!r}: need GRPOConfig's num_generations (1..1024)")
    (domain,) = source.domains
    cls = type(
        f"Gridbench_{domain}",
        (environment_class(domain),),
        {"settings": settings, "partial": partial, "source": AdaptiveGroups(source, group_size)},
    )
    rows = [
        {
            "prompt": [{"role": "user", "content": ""}],
            "environment": domain,
            "task_index": i,
            "episode_seed": i,
        }
        for i in range(rollouts)
    ]
    return rows, {domain: cls}
