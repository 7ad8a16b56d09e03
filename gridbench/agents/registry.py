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
from dataclasses import dataclass, field
from typing import Any

from gridbench.agents.baselines import AGENTS
from gridbench.agents.budget_aware import BudgetAwareAgent
from gridbench_core.errors import UserError
from gridbench_core.llm_settings import LLMSettings, field_names, yaml_defaults

BASELINES: dict[str, Any] = {**AGENTS, "budget_aware": BudgetAwareAgent}


@dataclass(frozen=True)
class AgentSpec:
    """A validated agent configuration, typed: ``label`` names the run, ``is_async`` picks the
    executor; ``llm`` holds an LLM agent's settings (never a secret), ``target`` and
    ``kwargs`` a custom agent's class and constructor arguments; ``concurrency`` is how many
    episodes of an asynchronous agent are in flight."""

    name: str
    label: str
    is_async: bool
    llm: LLMSettings | None = None
    target: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 1

    @property
    def model(self) -> str:
        """The model an LLM agent asks (as given); any other agent's label."""
        return self.llm.model if self.llm is not None else self.label


def _label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "agent"


def agent_spec(config: dict[str, Any]) -> AgentSpec:
    """Check an agent configuration (a mapping as ``conf/agent/*.yaml`` writes it: the edge,
    converted here once) and type it; raises :class:`UserError` naming the key and the fix.
    An LLM agent's settings not given are those of ``conf/agent/llm.yaml``."""
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
        concurrency = config.get("concurrency", yaml_defaults()["concurrency"])
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= 4096:
            raise UserError(f"agent.concurrency={concurrency!r} is out of range: use 1..4096")
        return AgentSpec(
            name or target,
            _label(target.rsplit(".", 1)[-1]),
            inspect.iscoroutinefunction(getattr(_target(target), "play", None)),
            target=target,
            kwargs=dict(config.get("kwargs") or {}),
            concurrency=concurrency,
        )
    if name == "llm":
        llm = LLMSettings.from_yaml_defaults(**{k: v for k, v in config.items() if k in field_names()})
        llm.validate()
        return AgentSpec(name, _label(f"llm-{llm.model}"), True, llm=llm, concurrency=llm.concurrency)
    if name not in BASELINES:
        raise UserError(
            f"unknown agent {name!r}; agents: {sorted([*BASELINES, 'llm'])}, or "
            "agent._target_=package.Class for your own"
        )
    return AgentSpec(name, name, False)


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
    if spec.target:
        from hydra.utils import instantiate

        return instantiate({"_target_": spec.target, **spec.kwargs})
    if spec.llm is not None:
        from gridbench.agents.llm import LLMAgent, load_templates

        return LLMAgent(spec.llm, load_templates(spec.llm.prompt_dir))
    return BASELINES[spec.name]()
