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
``method(**arguments)``; ``get_reward()`` scores the finished rollout. Tool names carry the
domain (``query_course_candidate_from_attribute``), so there is one environment class per
domain and the factories are a dict keyed by the rows' ``environment`` field.

Every method forwards its arguments unchanged to :meth:`Session.call`: a missing, extra or
ill-typed argument is answered and counted by the episode, as everywhere else.
"""

from __future__ import annotations

import inspect
import json
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

    def __init__(self) -> None:
        self.session: Session | None = None

    def reset(self, task_index: int = 0, episode_seed: int = 0, **row: Any) -> str:
        """Start the rollout on item ``task_index``; returns the task prompt (system rules and
        the task), which TRL appends to the row's user message. A row's ``task_id``, when it
        has one, must be that item's: a row that names another task is refused, never played
        as the task at its index."""
        for name, value in (("task_index", task_index), ("episode_seed", episode_seed)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UserError(f"{name}={str(value)[:40]!r}: need an int >= 0 (a row of environments())")
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

    def get_reward(self) -> float:
        """1.0 for a solved grid, else 0.0 (``partial``: the fraction of hidden cells right)."""
        return 0.0 if self.session is None else self.session.reward(self.partial)

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
) -> tuple[list[dict[str, Any]], dict[str, Callable[[], GridbenchEnvironment]]]:
    """Dataset rows and the ``environment_factory`` dict for ``GRPOTrainer``: one row per task
    and trial (``prompt``, ``environment`` = the domain, ``task_index``, ``episode_seed``,
    ``task_id`` when known), one factory per domain. ``tasks`` may be a
    ``gridbench.create_dataset(...)``: its tasks are then generated when a rollout first asks."""
    partial = partial_reward(reward)
    if not isinstance(trials, int) or trials < 1:
        raise UserError(f"trials={trials!r}: need an int >= 1")
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
