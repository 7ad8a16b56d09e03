"""The Inspect AI task ``gridbench/gridbench`` (registered through the ``inspect_ai`` entry point).

    inspect eval gridbench/gridbench --model openai/gpt-4o-mini -T failure_rate=0.1

One sample per task of the release (``-T release=PATH``, default
``outputs/releases/gridbench-v2.0.0``; filtered with ``-T domains=... -T hidden_slots=...
-T decoy_budgets=... -T task_ids=...``); ``--epochs N`` plays each task N times as trials
0..N-1 (the episode's seed, so the injected failures differ between trials as in
``make eval``). The model sees the episode's tools, with the same names and JSON schemas.

The turns are played by the same agent loop as ``make eval agent=llm``
(:class:`gridbench.agents.llm.loop.AgentLoop`): Inspect asks the model (its own providers,
retries and limits, ``generate(tool_calls="none")``), the loop reads the reply -- structured
calls, or calls written in the text --, runs them on the episode, answers them, sends
reminders and decides when the episode ends; the conversation goes back into Inspect's
messages, so ``inspect view`` shows exactly what the model saw. The scorer is
``gridbench.score``: success, with the fraction correct, what the episode spent and the
loop's counts (turns, text and malformed calls, reminders, tokens, the end reason) as
metadata, and ``api_retries``: the requests Inspect itself retried (its model events'
``retries``). A wrong ``-T`` argument is one ``error:`` line before any model call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    ModelOutput,
)
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

from core import paths
from core.errors import UserError, terminal_text
from gridbench.adapters.core import Session, env_settings, result_text, select
from gridbench.agents.llm.loop import AgentLoop, LoopSettings, Reply
from gridbench.agents.llm.toolcalls import NOT_JSON, ToolCall, parse_arguments
from pipeline.storage.safe import read_json

DEFAULT_RELEASE = str(paths.RELEASE)
FINISH = {"max_tokens": "length", "tool_calls": "tool_calls", "stop": "stop"}
TASK_ARGS = (
    "release",
    "failure_rate",
    "query_budget",
    "check_budget",
    "max_steps",
    "max_turns",
    "domains",
    "hidden_slots",
    "decoy_budgets",
    "task_ids",
    "partial",
    "max_reminders",
)

# The episodes being played, by Inspect sample uuid: the scorer reads and drops them.
_SESSIONS: dict[str, tuple[Session, AgentLoop]] = {}


class TaskArgumentError(UserError, PrerequisiteError):
    """A wrong ``-T`` argument: a :class:`UserError` in Python, one ``error:`` line (no
    traceback) on Inspect's command line."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)
        self.message = f"error: {message}"


def tool_defs(session: Session) -> list[ToolDef]:
    """The session's tools as Inspect tools: same names, same JSON schemas. The model sees
    them; the agent loop, not Inspect, runs the calls."""
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


def reply_of(output: ModelOutput) -> Reply:
    """The shared loop's :class:`Reply` of an Inspect model output (the same fields the
    runner reads off a chat-completions body)."""
    message = output.message
    calls = []
    for call in message.tool_calls or []:
        arguments, problem = (None, NOT_JSON) if call.parse_error else parse_arguments(dict(call.arguments))
        calls.append(ToolCall(call.id or None, call.function or "", arguments, problem))
    reasoning = (
        "".join(part.reasoning for part in message.content if isinstance(part, ContentReasoning))
        if isinstance(message.content, list)
        else ""
    )
    usage = output.usage
    prompt = 0
    if usage is not None:
        prompt = (
            usage.input_tokens + (usage.input_tokens_cache_read or 0) + (usage.input_tokens_cache_write or 0)
        )
    return Reply(
        content=message.text,
        tool_calls=calls,
        finish=FINISH.get(output.stop_reason, output.stop_reason),
        reasoning={"reasoning_content": reasoning} if reasoning else {},
        prompt_tokens=prompt,
        completion_tokens=usage.output_tokens if usage is not None else 0,
        reasoning_tokens=(usage.reasoning_tokens or 0) if usage is not None else 0,
        latency_ms=round((output.time or 0.0) * 1000.0, 3),
    )


def inspect_messages(answers: list[dict[str, Any]], names: dict[str, str]) -> list[ChatMessage]:
    """The loop's answers (tool results, ``<tool_response>`` and reminder messages) as
    Inspect messages."""
    out: list[ChatMessage] = []
    for answer in answers:
        if answer["role"] == "tool":
            call_id = answer["tool_call_id"]
            out.append(
                ChatMessageTool(content=answer["content"], tool_call_id=call_id, function=names.get(call_id))
            )
        else:
            out.append(ChatMessageUser(content=answer["content"]))
    return out


def _sync_ids(message: ChatMessageAssistant, loop: AgentLoop) -> dict[str, str]:
    """Make Inspect's assistant message carry the calls the loop answers, with the same ids
    (a call without an id gets the loop's; calls beyond the loop's limit are dropped, so that
    every call sent back has its answer); the function name of each id."""
    kept = loop.last_reply.get("tool_calls") or []
    if message.tool_calls:
        message.tool_calls = message.tool_calls[: len(kept)]
        for call, ours in zip(message.tool_calls, kept, strict=True):
            call.id = ours["id"]
    return {call["id"]: call["function"]["name"] for call in kept}


@solver
def play(release: str, settings: dict[str, Any], max_reminders: int, max_turns: int) -> Any:
    """Play one sample's task with the shared agent loop: the runner's prompt, the episode's
    tools, one model turn at a time until the loop says the episode is over."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        task = read_json(Path(release), meta["task_file"])
        answer = read_json(Path(release), meta["answer_file"])
        session = Session(task, answer, env_settings(**settings), seed=state.epoch - 1)
        system, user = session.messages()
        loop = AgentLoop(session.episode, LoopSettings(max_turns, max_reminders), [system, user])
        _SESSIONS[state.uuid] = (session, loop)
        state.messages = [
            ChatMessageSystem(content=system["content"]),
            ChatMessageUser(content=user["content"]),
        ]
        state.tools = [tool.as_tool() for tool in tool_defs(session)]
        while not loop.over and not state.completed:
            state = await generate(state, tool_calls="none")
            if state.output.stop_reason == "model_length":
                loop.end("context_length", "the conversation exceeds the model's context")
                break
            answers = loop.take(reply_of(state.output))
            names = _sync_ids(state.output.message, loop)
            state.messages.extend(inspect_messages(answers, names))
        return state

    return solve


def inspect_retries() -> int:
    """The requests Inspect retried in this sample, read from its own record: every model
    event that ended in an error (Inspect logs each failed attempt as one, then asks again),
    plus the HTTP retries counted inside an attempt (an event's ``retries``). The agent loop
    sees only the reply that came through, so it counts none of them."""
    events = [event for event in transcript().events if isinstance(event, ModelEvent)]
    return sum(event.retries or 0 for event in events) + sum(event.error is not None for event in events)


@scorer(metrics=[accuracy(), stderr()])
def grid_score(partial: bool = False) -> Any:
    """``gridbench.score`` of the episode's grid: CORRECT when every hidden cell holds its
    truth (or the fraction correct, with ``partial``); the details are the metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        played = _SESSIONS.pop(state.uuid, None)
        if played is None:
            return Score(value=INCORRECT, explanation="the episode never started")
        session, loop = played
        details = session.score()
        counts = loop.outcome.counters()
        details.update({k: v for k, v in counts.items() if k != "api_error"})
        details["api_retries"] = inspect_retries()
        value: Any = (
            details["fraction_correct"] if partial else (CORRECT if details["success"] else INCORRECT)
        )
        wrong = details["wrong_cells"]
        cells = f"{len(wrong)} hidden cell{'s' if len(wrong) != 1 else ''}"
        return Score(
            value=value,
            answer=result_text({"grid": session.episode.grid}),
            explanation="solved" if details["success"] else f"{cells} wrong: {wrong}",
            metadata=details,
        )

    return score


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise TaskArgumentError(f"-T {name}={str(value)[:40]!r}: use true or false")


def _count(value: Any, name: str, low: int) -> int:
    try:
        number = int(value)
        if isinstance(value, bool) or number != float(value) or number < low:
            raise ValueError
    except (TypeError, ValueError):
        raise TaskArgumentError(f"-T {name}={str(value)[:40]!r}: give an integer >= {low}") from None
    return number


def _sample(record: Any, settings: dict[str, Any]) -> Sample:
    """One task of the release as a sample: its prompt, and where its files are; the task and
    its answer are read, and refused (a :class:`UserError`) when damaged."""
    session = Session(record.task, record.answer, env_settings(**settings))
    return Sample(
        id=record.task_id,
        input=session.messages()[1]["content"],
        target="solved",
        metadata={
            "domain": record.domain,
            "hidden_slots": record.hidden_slots,
            "decoy_budget": record.decoy_budget,
            "task_file": record.task_file,
            "answer_file": "answers/" + record.task_file[len("tasks/") :],
        },
    )


@task
def gridbench(
    release: str = DEFAULT_RELEASE,
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 200,
    max_turns: int | None = None,
    domains: Any = None,
    hidden_slots: Any = None,
    decoy_budgets: Any = None,
    task_ids: Any = None,
    partial: bool = False,
    max_reminders: int | None = None,
    **unknown: Any,
) -> Task:
    """Every task of ``release`` (optionally filtered) as one sample, played with the
    episode's tools by the shared agent loop and scored by ``gridbench.score``."""
    unknown.pop("model", None)  # Inspect passes the model to every task that takes **kwargs
    if unknown:
        raise TaskArgumentError(
            f"-T {sorted(unknown)[0]}: unknown task argument; the arguments are {', '.join(TASK_ARGS)}"
        )
    try:
        partial = _flag(partial, "partial")
        if "\0" in str(release) or len(str(release)) > 4096:
            raise TaskArgumentError(
                f"-T release={terminal_text(release, 80)}: not a usable path (a NUL byte, or longer "
                "than 4096 characters)"
            )
        root = Path(str(release)).expanduser().resolve()
        if not (root / "manifest.json").is_file():
            raise TaskArgumentError(
                f"-T release={release}: not a release (no manifest.json); build one with `make release` "
                "or pass -T release=PATH"
            )
        records = select(root, domains, hidden_slots, decoy_budgets, task_ids)
        settings: dict[str, Any] = {
            "failure_rate": failure_rate,
            "query_budget": query_budget,
            "check_budget": check_budget,
            "max_steps": _count(max_steps, "max_steps", 1),
        }
        env_settings(**settings)  # a wrong setting stops here, before any model call
        limits = LoopSettings.from_llm()  # None: the LLM agent's defaults (conf/agent/llm.yaml)
        turns = limits.max_turns if max_turns is None else _count(max_turns, "max_turns", 1)
        reminders = (
            limits.max_reminders if max_reminders is None else _count(max_reminders, "max_reminders", 0)
        )
        # every task and answer is read (and checked) here, so that a damaged release is one
        # line before any model call, not an exception group from inside a running sample
        samples = [_sample(record, settings) for record in records]
    except TaskArgumentError:
        raise
    except UserError as error:
        raise TaskArgumentError(f"-T release={terminal_text(release, 200)}: {error}") from None
    return Task(
        dataset=MemoryDataset(samples, name=root.name),
        solver=play(str(root), settings, reminders, turns),
        scorer=grid_score(partial),
        metadata={"release": str(root), **settings, "max_turns": turns, "max_reminders": reminders},
    )
