"""From an agent configuration (``conf/agent/*.yaml``) to something that plays episodes.

Three kinds, one interface each:

- a baseline by ``name`` (``agents/baselines.py``, ``agents/budget_aware.py``): synchronous,
  CPU-bound, run in a process pool;
- ``name: llm``: :class:`agents.llm.LLMAgent`, asynchronous, many episodes in flight in one
  process;
- a custom agent: ``_target_: my_package.MyAgent`` (``hydra.utils.instantiate`` with
  ``kwargs``), an object with ``play(episode, rng) -> None`` (run in the process pool) or
  ``async play(episode) -> None | Outcome`` (run concurrently).
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, fields
from typing import Any

from core.errors import UserError
from gridbench.agents.baselines import AGENTS
from gridbench.agents.budget_aware import BudgetAwareAgent

BASELINES: dict[str, Any] = {**AGENTS, "budget_aware": BudgetAwareAgent}


@dataclass(frozen=True)
class AgentSpec:
    """A validated agent configuration: ``label`` names the run, ``is_async`` picks the
    executor; ``config`` is the plain configuration (never holds a secret)."""

    name: str
    label: str
    is_async: bool
    config: dict[str, Any]


def _label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "agent"


def agent_spec(config: dict[str, Any]) -> AgentSpec:
    """Check an agent configuration; raises ``ValueError`` naming the key and the fix."""
    if not isinstance(config, dict):
        raise UserError(f"an agent configuration is a mapping, got {type(config).__name__}")
    target = str(config.get("_target_") or "")
    name = str(config.get("name") or "")
    for key, value in config.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"agent.{key}={value}: must be a finite number")
    if config.get("kwargs") and not target:
        raise UserError(
            f"agent.kwargs={str(config['kwargs'])[:60]}: kwargs go to the constructor of your own "
            f"agent (agent._target_=package.Class); the built-in agent {name!r} takes none"
        )
    if config.get("kwargs") is not None and not isinstance(config["kwargs"], dict):
        raise UserError(
            "agent.kwargs must be a mapping of constructor arguments, e.g. agent.kwargs={depth: 2}"
        )
    if target:
        return AgentSpec(
            name or target,
            _label(target.rsplit(".", 1)[-1]),
            inspect.iscoroutinefunction(getattr(_target(target), "play", None)),
            config,
        )
    if name == "llm":
        if not config.get("model"):
            raise UserError("agent=llm needs agent.model=<model name>")
        llm_settings(config).validate()
        return AgentSpec(name, _label(f"llm-{config['model']}"), True, config)
    if name not in BASELINES:
        raise UserError(
            f"unknown agent {name!r}; agents: {sorted([*BASELINES, 'llm'])}, or "
            "agent._target_=package.Class for your own"
        )
    return AgentSpec(name, name, False, config)


def _target(path: str) -> Any:
    from hydra.utils import get_class

    try:
        return get_class(path)
    except Exception as error:  # hydra raises several kinds for a bad path
        raise UserError(f"agent._target_={path!r} cannot be imported: {error}") from None


def make_agent(spec: AgentSpec) -> Any:
    """The agent object of a spec (built where it plays: a worker process or the event loop)."""
    if not isinstance(spec, AgentSpec):
        raise UserError(f"make_agent takes gridbench.agent_spec(...), got {type(spec).__name__}")
    if spec.config.get("_target_"):
        from hydra.utils import instantiate

        return instantiate({"_target_": spec.config["_target_"], **(spec.config.get("kwargs") or {})})
    if spec.name == "llm":
        from gridbench.agents.llm import LLMAgent, load_templates

        return LLMAgent(llm_settings(spec.config), load_templates(spec.config.get("prompt_dir")))
    return BASELINES[spec.name]()


def llm_settings(config: dict[str, Any]) -> Any:
    """The :class:`LLMSettings` of an ``agent=llm`` configuration (its other keys ignored)."""
    from gridbench.agents.llm import LLMSettings

    known = {f.name for f in fields(LLMSettings)}
    values = {k: v for k, v in config.items() if k in known}
    values["extra_body"] = dict(values.get("extra_body") or {})
    return LLMSettings(**values)
