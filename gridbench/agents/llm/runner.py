"""The LLM agent: one chat-completions loop per episode over any OpenAI-compatible server
(OpenAI, vLLM, SGLang, Ollama, LM Studio), with the official ``openai`` SDK's async client.

Each turn sends the messages and the episode's tool schemas, executes the tool calls of the
reply in order (structured ``tool_calls``, or calls written in the text), and answers each one
with the environment's result. What real servers do is handled and counted, never raised:
retries (429, 5xx, time-outs: the SDK's ``max_retries``, counted in ``api_retries``), text
tool calls, malformed arguments and unknown tools (an error result the model can correct),
replies cut at ``max_tokens``, empty replies and replies without a tool call (a reminder, up to
``max_reminders``), an exceeded context. Every episode ends with a typed ``end_reason``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import openai

from env import Episode, openai_schemas
from gridbench.agents.llm.prompt import PromptTemplates, render
from gridbench.agents.llm.toolcalls import ToolCall, structured_calls, text_calls
from gridbench.errors import UserError

END_REASONS = ("done", "max_steps", "no_tool_call", "context_length", "api_error")
CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "max_model_len",
)
_requests: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("requests", default=None)


@dataclass(frozen=True)
class LLMSettings:
    """What the runner sends and how long it goes on (``conf/agent/llm.yaml``)."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    max_steps: int = 200  # model turns per episode
    timeout: float = 120.0  # seconds per request
    max_retries: int = 4  # SDK retries of 429 / 5xx / time-outs, with backoff
    tool_choice: str | None = "auto"
    parallel_tool_calls: bool | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    max_reminders: int = 3  # replies in a row without a tool call before end_reason=no_tool_call
    concurrency: int = 32

    def request(self) -> dict[str, Any]:
        """The optional request parameters that are set."""
        out: dict[str, Any] = {"model": self.model, "timeout": self.timeout}
        for name in ("temperature", "top_p", "max_tokens", "seed", "tool_choice", "parallel_tool_calls"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.extra_body:
            out["extra_body"] = dict(self.extra_body)
        return out


@dataclass
class Outcome:
    """What one episode did, for the results row, and its transcript."""

    end_reason: str = "max_steps"
    turns: int = 0
    text_tool_calls: int = 0
    malformed_tool_calls: int = 0
    reminders: int = 0
    unanswered: int = 0  # replies without a tool call in a row
    length_cuts: int = 0
    api_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    error: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)

    def counters(self) -> dict[str, Any]:
        """The episode's counters for its results row (``api_retries`` derived from the requests)."""
        return {
            "end_reason": self.end_reason,
            "turns": self.turns,
            "text_tool_calls": self.text_tool_calls,
            "malformed_tool_calls": self.malformed_tool_calls,
            "reminders": self.reminders,
            "length_cuts": self.length_cuts,
            "api_retries": max(0, self.api_requests - self.turns - (self.end_reason == "api_error")),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "latency_ms_sum": round(sum(self.latencies_ms), 3),
            "latency_ms_median": round(statistics.median(self.latencies_ms), 3) if self.latencies_ms else 0.0,
            "api_error": self.error[:500],
        }


def api_key(settings: LLMSettings) -> str:
    """The key from the environment variable the settings name. Local servers take any key;
    the OpenAI endpoint needs a real one (a clear error otherwise)."""
    key = os.environ.get(settings.api_key_env, "")
    if not key and not settings.base_url:
        raise UserError(
            f"no API key: set the environment variable {settings.api_key_env} (or "
            "agent.api_key_env=NAME), or point agent.base_url at a local server"
        )
    return key or "EMPTY"


async def _count_request(request: Any) -> None:
    counter = _requests.get()
    if counter is not None:
        counter[0] += 1


def make_client(settings: LLMSettings) -> openai.AsyncOpenAI:
    """One async client shared by every episode of a run (connection pooling); each HTTP
    request, retries included, is counted for the episode that made it."""
    for name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING)  # no line per request in run logs
    http = openai.DefaultAsyncHttpxClient(
        event_hooks={"request": [_count_request]}, limits=_limits(settings.concurrency)
    )
    return openai.AsyncOpenAI(
        api_key=api_key(settings),
        base_url=settings.base_url or None,
        max_retries=settings.max_retries,
        timeout=settings.timeout,
        http_client=http,
    )


def _limits(concurrency: int) -> Any:
    import httpx2

    return httpx2.Limits(
        max_connections=max(concurrency, 1) + 4, max_keepalive_connections=max(concurrency, 1) + 4
    )


def _is_context_error(error: openai.APIStatusError) -> bool:
    text = f"{getattr(error, 'code', '')} {error.message} {getattr(error, 'body', '')}".lower()
    return error.status_code in (400, 413, 422) and any(m in text for m in CONTEXT_MARKERS)


def _assistant_message(message: Any, turn: int) -> dict[str, Any]:
    """The reply as it goes back into the conversation (and the transcript), with any
    reasoning the server returns (``reasoning_content`` or ``reasoning``) kept. A tool call
    the server sent without an id gets one, so that its result can answer it."""
    out: dict[str, Any] = {"role": "assistant", "content": getattr(message, "content", None) or ""}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {
                "id": getattr(c, "id", None) or f"call_{turn}_{k}",
                "type": "function",
                "function": {
                    "name": getattr(getattr(c, "function", None), "name", None),
                    "arguments": getattr(getattr(c, "function", None), "arguments", None),
                },
            }
            for k, c in enumerate(calls)
        ]
    extra = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key, getattr(message, key, None))
        if value:
            out[key] = value
    return out


def _execute(episode: Episode, call: ToolCall) -> dict[str, Any]:
    if call.arguments is None:
        return {
            "status": "error",
            "message": f"malformed tool call: {call.problem}; send the arguments as one JSON object",
            "data": None,
        }
    if not call.name:
        return {"status": "error", "message": "the tool call names no tool", "data": None}
    return episode.call(call.name, call.arguments)


class LLMAgent:
    """Plays episodes through a chat-completions endpoint."""

    name = "llm"

    def __init__(
        self, settings: LLMSettings, templates: PromptTemplates, client: openai.AsyncOpenAI | None = None
    ) -> None:
        self.settings, self.templates = settings, templates
        self.client = client or make_client(settings)

    async def play(self, episode: Episode) -> Outcome:
        """Play one episode to its end; never raises for what a server or a model does."""
        outcome = Outcome(messages=render(self.templates, episode))
        counter = [0]
        _requests.set(counter)
        try:
            await self._loop(episode, outcome)
        finally:
            outcome.api_requests = counter[0]
        return outcome

    async def _loop(self, episode: Episode, outcome: Outcome) -> None:
        tools = openai_schemas(episode.task.domain)
        request = self.settings.request()
        for _ in range(self.settings.max_steps):
            if episode.finished:
                outcome.end_reason = "done" if not episode.truncated else "max_steps"
                return
            reply = await self._ask(outcome, tools, request)
            if reply is None:
                return
            outcome.turns += 1
            if not self._act(episode, outcome, reply):
                return
        outcome.end_reason = "done" if episode.finished and not episode.truncated else "max_steps"

    async def _ask(self, outcome: Outcome, tools: list[dict], request: dict[str, Any]) -> Any:
        start = time.perf_counter()
        # The conversation and the tools go in ``extra_body``: the SDK then sends them as they
        # are instead of walking them through its TypedDict transform, which costs several
        # milliseconds of CPU per turn on long episodes (the same JSON reaches the server).
        body = {**request.get("extra_body", {}), "messages": outcome.messages, "tools": tools}
        try:
            response = await self.client.chat.completions.create(
                messages=[], **{**request, "extra_body": body}
            )  # type: ignore[call-overload]
        except openai.APIStatusError as error:
            outcome.end_reason = "context_length" if _is_context_error(error) else "api_error"
            outcome.error = f"{error.status_code}: {error.message}"
            return None
        except (openai.APIConnectionError, openai.APIError) as error:  # time-outs included
            outcome.end_reason, outcome.error = "api_error", f"{type(error).__name__}: {error}"
            return None
        outcome.latencies_ms.append((time.perf_counter() - start) * 1000.0)
        usage = getattr(response, "usage", None)
        if usage is not None:
            outcome.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
            outcome.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
            details = getattr(usage, "completion_tokens_details", None)
            outcome.reasoning_tokens += int(getattr(details, "reasoning_tokens", 0) or 0)
        return response

    def _act(self, episode: Episode, outcome: Outcome, response: Any) -> bool:
        """Execute the reply; False when the episode ends here."""
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        assistant = _assistant_message(message, outcome.turns)
        outcome.messages.append(assistant)
        calls = structured_calls(assistant.get("tool_calls"))
        if not calls:
            calls = text_calls(assistant["content"])
            outcome.text_tool_calls += len(calls)
        if not calls:
            return self._remind(outcome, finish)
        outcome.unanswered = 0
        for call in calls:
            outcome.malformed_tool_calls += (
                call.arguments is None or not call.name or call.name not in episode.tools
            )
            result = _execute(episode, call)
            outcome.messages.append(_tool_message(call, result))
            if episode.finished:
                break
        if episode.finished:
            outcome.end_reason = "done" if not episode.truncated else "max_steps"
            return False
        return True

    def _remind(self, outcome: Outcome, finish: str | None) -> bool:
        if finish == "length":
            outcome.length_cuts += 1
            text = (
                "Your reply was cut off at the token limit and no tool call was run. Reply "
                "with shorter reasoning and complete tool calls."
            )
        else:
            text = (
                "No tool call was found in your reply. Continue by calling tools; call "
                "done() when every hidden cell is filled."
            )
        outcome.reminders += 1
        outcome.unanswered += 1
        if outcome.unanswered > self.settings.max_reminders:
            outcome.end_reason = "no_tool_call"
            return False
        outcome.messages.append({"role": "user", "content": text})
        return True


def _tool_message(call: ToolCall, result: dict[str, Any]) -> dict[str, Any]:
    """The environment's answer: a ``tool`` message for a structured call, a user message
    (Hermes ``<tool_response>``) for a call written in the text."""
    if call.call_id is not None:
        return {
            "role": "tool",
            "tool_call_id": call.call_id,
            "content": json.dumps(result, ensure_ascii=False, default=str),
        }
    text = json.dumps({"name": call.name, "result": result}, ensure_ascii=False, default=str)
    return {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}


async def play_many(agent: LLMAgent, jobs: list[Any], start: Any, finish: Any) -> None:
    """Run ``start(job) -> Episode`` and ``agent.play`` for every job, ``concurrency`` at a time,
    calling ``finish(job, episode, outcome)`` as each one ends (in completion order)."""
    gate = asyncio.Semaphore(max(1, agent.settings.concurrency))

    async def one(job: Any) -> None:
        async with gate:
            episode = start(job)
            outcome = await agent.play(episode)
            finish(job, episode, outcome)

    await asyncio.gather(*(one(job) for job in jobs))
