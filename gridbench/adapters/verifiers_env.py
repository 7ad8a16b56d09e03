"""gridbench for Prime Intellect's ``verifiers`` (0.4, its ``verifiers.v1`` stack).

verifiers 0.4.0 pins ``mcp==2.0.0`` and ``openai<3``, and gridbench ``openai==3.51.0`` and
``mcp==2.3.0``: they cannot share one environment, so this module runs in a venv of its own
(``make verifiers-env`` builds ``.venv-verifiers``: verifiers, gridbench's solvers and tables,
gridbench itself without its pins). Everything below imports verifiers; nothing else of
gridbench imports this module.

    import gridbench.adapters.verifiers_env as gv
    env = gv.load_environment(release="outputs/releases/gridbench-v2.0.0", failure_rate=0.1)
    # or run verifiers' own evaluation loop: gv.eval_config(...) -> verifiers' run_eval

A verifiers environment is a *taskset* (the tasks) played by a *harness* (the agent program,
whose every model call goes through verifiers' interception endpoint, which records the
trace a trainer learns from). :class:`GridbenchTaskset` holds one task per task of a release
(filtered) and trial; :class:`GridbenchHarness` plays it **in-process with gridbench's own
agent loop** -- :class:`gridbench.agents.llm.runner.LLMAgent`, the loop of ``make eval
agent=llm``: the same prompt, tools, budgets, failure draws, text tool calls, reminders and
scoring -- pointed at the interception endpoint. The episode's reward (1.0 for a solved grid;
the fraction right with ``partial``) is recorded on the trace as ``gridbench``, with the
fraction correct, steps and invalid calls as metrics and the whole results row in
``trace.info["gridbench"]``.

verifiers finds tasksets and harnesses by id, importing ``verifiers.v1.tasksets.<id>`` or a
top-level module of that name; importing this module registers it as the taskset and the
harness ``gridbench`` (``load_environment`` and :func:`eval_config` do it for you).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.runtimes import ProgramResult

from gridbench.adapters.core import Session, env_settings, select
from gridbench_core import paths

TASKSET_ID = "gridbench"


class GridbenchData(vf.TaskData):  # type: ignore[misc]  # verifiers ships no type hints
    """One episode to play: the task and answer files, the episode settings and seed."""

    task: dict[str, Any]
    answer: dict[str, Any]
    episode: dict[str, Any]
    episode_seed: int = 0
    max_turns: int | None = None
    max_reminders: int | None = None
    partial: bool = False


class GridbenchTask(vf.Task[GridbenchData]):  # type: ignore[misc]
    """A gridbench task; the harness records its reward on the trace."""


class GridbenchConfig(vf.TasksetConfig):  # type: ignore[misc]
    """Which tasks (a release, filtered) and the episode options (as every adapter's)."""

    release: str = str(paths.RELEASE)
    domains: list[str] | None = None
    hidden_slots: list[int] | None = None
    decoy_budgets: list[int] | None = None
    task_ids: list[str] | None = None
    failure_rate: float = 0.0
    query_budget: str | int = "unlimited"
    check_budget: str | int = "unlimited"
    max_steps: int = 200
    max_turns: int | None = None  # model turns (None: conf/agent/llm.yaml's max_steps)
    max_reminders: int | None = None
    partial: bool = False
    trials: int = Field(1, ge=1)


class GridbenchTaskset(vf.Taskset[GridbenchTask, GridbenchConfig]):  # type: ignore[misc]
    """One task per task of the release (filtered) and trial (the trial is the episode seed)."""

    def load(self) -> Iterator[GridbenchTask]:
        """The tasks, in the release's order, each trial after the other."""
        config = self.config
        episode = {
            "failure_rate": config.failure_rate,
            "query_budget": config.query_budget,
            "check_budget": config.check_budget,
            "max_steps": config.max_steps,
        }
        settings = env_settings(**episode)
        records = select(
            config.release, config.domains, config.hidden_slots, config.decoy_budgets, config.task_ids
        )
        for record in records:
            system, user = Session(record.task, None, settings).messages()
            for trial in range(config.trials):
                yield GridbenchTask(
                    GridbenchData(
                        id=f"{record.task_id}#{trial}",
                        name=record.task_id,
                        prompt=user["content"],
                        system_prompt=system["content"],
                        task=record.task,
                        answer=record.answer,
                        episode=episode,
                        episode_seed=trial,
                        max_turns=config.max_turns,
                        max_reminders=config.max_reminders,
                        partial=config.partial,
                    ),
                    config.task,
                )


class GridbenchHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]
    """The harness's knobs: none beyond verifiers' own."""


class GridbenchHarness(vf.Harness[GridbenchHarnessConfig]):  # type: ignore[misc]
    """gridbench's agent loop, in-process, every model call through verifiers' endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        **kwargs: Any,
    ) -> Any:
        """Play the episode of ``data`` with the runner's loop; record its reward on ``trace``."""
        row = await play(data, ctx.model, endpoint, secret)
        reward = row["fraction_correct"] if data.partial else float(row["success"])
        trace.record_reward(TASKSET_ID, reward)
        trace.record_metrics(
            {
                "fraction_correct": float(row["fraction_correct"]),
                "steps": float(row["steps"]),
                "invalid_calls": float(row["invalid_calls"]),
                "turns": float(row["turns"]),
            }
        )
        trace.info[TASKSET_ID] = row
        return ProgramResult(exit_code=0, stdout=json.dumps(row, default=str), stderr="")


async def play(data: Any, model: str, endpoint: str, secret: str) -> dict[str, Any]:
    """One episode of ``data`` played by :class:`LLMAgent` against ``endpoint``: the score
    and the loop's counts (the columns of ``make eval``'s results row)."""
    import openai

    from gridbench.agents.llm.prompt import load_templates
    from gridbench.agents.llm.runner import LLMAgent
    from gridbench_core.llm_settings import LLMSettings

    session = Session(data.task, data.answer, env_settings(**data.episode), seed=data.episode_seed)
    values: dict[str, Any] = {"model": model, "base_url": endpoint}
    if data.max_turns is not None:
        values["max_steps"] = data.max_turns
    if data.max_reminders is not None:
        values["max_reminders"] = data.max_reminders
    settings = LLMSettings.from_yaml_defaults(**values)
    client = openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0, timeout=settings.timeout)
    try:
        outcome = await LLMAgent(settings, load_templates(), client=client).play(session.episode)
    finally:
        await client.close()
    counts = {k: v for k, v in outcome.counters().items() if k != "api_error"}
    return {"task_id": session.task_id, **session.score(), **counts}


def register() -> None:
    """Make this module verifiers' taskset and harness ``gridbench`` (its loader imports
    ``verifiers.v1.tasksets.<id>`` and ``verifiers.v1.harnesses.<id>``, and reads the one
    Taskset and Harness subclass each exports)."""
    module = sys.modules[__name__]
    sys.modules.setdefault(f"verifiers.v1.tasksets.{TASKSET_ID}", module)
    sys.modules.setdefault(f"verifiers.v1.harnesses.{TASKSET_ID}", module)


def env_config(**taskset: Any) -> Any:
    """verifiers' environment config: the gridbench taskset (``taskset`` holds
    :class:`GridbenchConfig`'s fields) played by the gridbench harness in this process."""
    register()
    from verifiers.v1.utils.loaders import resolve_env_config

    return resolve_env_config(
        {
            "taskset": {"id": TASKSET_ID, **taskset},
            "agent": {"harness": {"id": TASKSET_ID}, "runtime": {"type": "subprocess"}},
        }
    )


def load_environment(**taskset: Any) -> Any:
    """The verifiers environment (a ``verifiers.v1.Env``) over gridbench tasks: ``release``,
    ``domains``, ``hidden_slots``, ``decoy_budgets``, ``task_ids``, ``failure_rate``,
    ``query_budget``, ``check_budget``, ``max_steps``, ``max_turns``, ``max_reminders``,
    ``partial``, ``trials``."""
    return vf.load_environment(env_config(**taskset))


def eval_config(
    model: str, base_url: str, output_dir: str, api_key_var: str = "OPENAI_API_KEY", **taskset: Any
) -> Any:
    """The config of verifiers' own evaluation loop (``verifiers.v1.cli.eval.runner.run_eval``)
    over gridbench tasks, against the OpenAI-compatible server at ``base_url``; nothing is
    pushed anywhere and no dashboard is drawn."""
    from verifiers.v1.configs.cli.eval import EvalConfig

    return EvalConfig.model_validate(
        {
            "env": env_config(**taskset).model_dump(),
            "model": model,
            "client": {"base_url": base_url, "api_key_var": api_key_var},
            "output_dir": output_dir,
            "push": False,
            "rich": None,
            "max_concurrent": 4,
        }
    )


register()

__all__ = [
    "GridbenchConfig",
    "GridbenchData",
    "GridbenchHarness",
    "GridbenchTask",
    "GridbenchTaskset",
    "env_config",
    "eval_config",
    "load_environment",
    "play",
    "register",
]
