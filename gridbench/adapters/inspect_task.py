"""The Inspect AI task ``gridbench/gridbench`` (registered through the ``inspect_ai`` entry point).

    inspect eval gridbench/gridbench --model openai/gpt-4o-mini -T release=PATH -T failure_rate=0.1

One sample per task of the release (filtered with ``-T domains=... -T hidden_slots=...
-T decoy_budgets=... -T task_ids=...``); ``--epochs N`` plays each task N times as trials
0..N-1 (the episode's seed, so the injected failures differ between trials as in
``make eval``). The episode's tools are Inspect tools with the same names and JSON schemas;
each call goes to :meth:`Session.call` and the model reads the same JSON text as with the
LLM runner. The scorer is ``gridbench.score``: success, with the fraction correct and the
episode's spending as metadata.

One difference is Inspect's own: it checks tool arguments against the JSON schema before a
tool runs, so a call that breaks the schema (a missing argument, a string for an integer) or
names no tool is answered by Inspect, with Inspect's message, and never reaches the episode.
It still counts as a step and an invalid call (towards ``max_steps``), and the score's
``schema_errors`` counts them apart. Calls that fit the schema but not the task (a fixed
cell, an id that is not a candidate) reach the episode and are answered as everywhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

from gridbench.adapters.core import Session, env_settings, result_text, select
from gridbench.errors import UserError
from pipeline.storage.safe import read_json

REMINDER = "Please continue by calling one of the tools; call done() when every hidden cell is filled."

# The sessions being played, by Inspect sample uuid: the scorer reads and drops them.
_SESSIONS: dict[str, Session] = {}


def tool_defs(session: Session) -> list[ToolDef]:
    """The session's tools as Inspect tools: same names, same JSON schemas."""
    defs = []
    for schema in session.tools:
        function = schema["function"]

        def make(name: str) -> Any:
            async def execute(**kwargs: Any) -> str:
                return result_text(session.call(name, kwargs))

            return execute

        defs.append(
            ToolDef(
                make(function["name"]),
                name=function["name"],
                description=function["description"],
                parameters=ToolParams.model_validate(function["parameters"]),
                parallel=False,
            )
        )
    return defs


@solver
def play(
    release: str,
    settings: dict[str, Any],
    max_reminders: int = 3,
) -> Any:
    """Play one sample's task: the runner's prompt, the episode's tools, one model turn at a
    time until ``done``, the step limit, or ``max_reminders`` replies without a tool call."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        task = read_json(Path(release), meta["task_file"])
        answer = read_json(Path(release), meta["answer_file"])
        session = Session(task, answer, env_settings(**settings), seed=state.epoch - 1)
        _SESSIONS[state.uuid] = session
        system, user = session.messages()
        state.messages = [
            ChatMessageSystem(content=system["content"]),
            ChatMessageUser(content=user["content"]),
        ]
        state.tools = [tool.as_tool() for tool in tool_defs(session)]
        unanswered = 0
        while not session.over and not state.completed:
            before = len(state.messages)
            state = await generate(state, tool_calls="single")
            for message in state.messages[before:]:
                # a call Inspect answered itself (it broke the schema, named no tool): the
                # episode never saw it, but it is a step and an invalid call all the same
                if isinstance(message, ChatMessageTool) and message.error is not None:
                    session.episode.reject(f"answered by Inspect: {message.error.message}")
            if state.output.message.tool_calls:
                unanswered = 0
                continue
            unanswered += 1
            if unanswered > max_reminders:
                break
            state.messages.append(ChatMessageUser(content=REMINDER))
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def grid_score(partial: bool = False) -> Any:
    """``gridbench.score`` of the episode's grid: CORRECT when every hidden cell holds its
    truth (or the fraction correct, with ``partial``); the details are the metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        session = _SESSIONS.pop(state.uuid, None)
        if session is None:
            return Score(value=INCORRECT, explanation="the episode never started")
        details = session.score()
        details["schema_errors"] = sum(
            1
            for message in state.messages
            if isinstance(message, ChatMessageTool)
            and message.error is not None
            and message.error.type == "parsing"
        )
        value: Any = (
            details["fraction_correct"] if partial else (CORRECT if details["success"] else INCORRECT)
        )
        wrong = details["wrong_cells"]
        return Score(
            value=value,
            answer=result_text({"grid": session.episode.grid}),
            explanation="solved" if details["success"] else f"{len(wrong)} hidden cells wrong: {wrong}",
            metadata=details,
        )

    return score


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise UserError(f"{name}={str(value)[:40]!r}: use true or false")


@task
def gridbench(
    release: str,
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 200,
    domains: Any = None,
    hidden_slots: Any = None,
    decoy_budgets: Any = None,
    task_ids: Any = None,
    partial: bool = False,
    max_reminders: int = 3,
) -> Task:
    """Every task of ``release`` (optionally filtered) as one sample, played with the
    episode's tools and scored by ``gridbench.score``."""
    partial = _flag(partial, "partial")
    root = Path(release).expanduser().resolve()
    records = select(root, domains, hidden_slots, decoy_budgets, task_ids)
    settings: dict[str, Any] = {
        "failure_rate": failure_rate,
        "query_budget": query_budget,
        "check_budget": check_budget,
        "max_steps": max_steps,
    }
    env_settings(**settings)  # a wrong setting stops here, before any model call
    samples = []
    for record in records:
        prompt = Session(record.task, None, env_settings(**settings)).messages()[1]["content"]
        samples.append(
            Sample(
                id=record.task_id,
                input=prompt,
                target="solved",
                metadata={
                    "domain": record.domain,
                    "hidden_slots": record.hidden_slots,
                    "decoy_budget": record.decoy_budget,
                    "task_file": record.task_file,
                    "answer_file": "answers/" + record.task_file[len("tasks/") :],
                },
            )
        )
    return Task(
        dataset=MemoryDataset(samples, name=root.name),
        solver=play(str(root), settings, max_reminders),
        scorer=grid_score(partial),
        metadata={"release": str(root), **settings},
    )
