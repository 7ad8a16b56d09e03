"""The agent loop: what happens with a model's reply, whoever asked the model.

One place decides, for ``make eval agent=llm`` (:mod:`gridbench.agents.llm.runner`) and for
the Inspect AI solver (:mod:`gridbench.adapters.inspect_task`) alike:

- which tool calls a reply holds: its structured ``tool_calls``, else calls written in its
  text (``<tool_call>{...}</tool_call>`` or a bare JSON object), at most
  ``max_calls_per_reply`` of them;
- how each is answered: the episode's result (a ``tool`` message for a structured call, a
  ``<tool_response>`` user message for one written in the text), or an error result for
  arguments that cannot be read or a call that names no tool;
- when a reminder is sent (a reply without a tool call, one cut at ``max_tokens``), and when
  the episode ends instead (``max_reminders`` in a row, or no turn left for an answer);
- every count of the results row, and the ``end_reason``.

A client turns what its server answered into a :class:`Reply` and hands it to
:meth:`AgentLoop.take`, which returns the messages to send back. A request that fails
ends the episode through :meth:`AgentLoop.end`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from core.llm_settings import LLMSettings, yaml_defaults
from gridbench.agents.llm.toolcalls import MAX_TEXT, ToolCall, structured_calls, text_calls
from gridbench.env import Episode

END_REASONS = ("done", "max_steps", "no_tool_call", "context_length", "api_error")
REMINDER = (
    "No tool call was found in your reply. Continue by calling tools; call done() when every "
    "hidden cell is filled."
)
LENGTH_REMINDER = (
    "Your reply was cut off at the token limit and no tool call was run. Reply with shorter "
    "reasoning and complete tool calls."
)
MAX_CALLS_PER_REPLY = 64
# Tokens one reply may count (prompt, completion or reasoning): more than any context holds.
# Beyond it a count is a usage error, so that an episode's sums stay far inside int64.
MAX_USAGE = 10**9


@dataclass(frozen=True)
class LoopSettings:
    """How long an episode goes on: model turns, reminders in a row, calls run per reply. The
    first two have their defaults in ``conf/agent/llm.yaml`` (``max_steps``, ``max_reminders``):
    :meth:`from_llm` takes them from an agent's settings."""

    max_turns: int
    max_reminders: int
    max_calls_per_reply: int = MAX_CALLS_PER_REPLY

    @classmethod
    def from_llm(cls, settings: LLMSettings | None = None) -> LoopSettings:
        """The turn limits of ``settings`` (default: ``conf/agent/llm.yaml``'s)."""
        if settings is None:
            values = yaml_defaults()
            return cls(max_turns=int(values["max_steps"]), max_reminders=int(values["max_reminders"]))
        return cls(max_turns=settings.max_steps, max_reminders=settings.max_reminders)


@dataclass
class Reply:
    """One model reply, whichever client received it: the text, the structured calls (as
    the server sent them), why generation stopped (``length`` for a cut at ``max_tokens``),
    any reasoning text, and the server's token counts (``usage_error`` when its ``usage``
    could not be read)."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish: str | None = None
    reasoning: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    usage_error: bool = False
    latency_ms: float = 0.0


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
    api_retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    usage_errors: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    error: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    call_turns: list[int] = field(default_factory=list)  # the model turn of each environment call

    def counters(self) -> dict[str, Any]:
        """The episode's counters for its results row."""
        return {
            "end_reason": self.end_reason,
            "turns": self.turns,
            "text_tool_calls": self.text_tool_calls,
            "malformed_tool_calls": self.malformed_tool_calls,
            "reminders": self.reminders,
            "length_cuts": self.length_cuts,
            "api_retries": self.api_retries,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "usage_errors": self.usage_errors,
            "latency_ms_sum": round(sum(self.latencies_ms), 3),
            "latency_ms_median": round(statistics.median(self.latencies_ms), 3) if self.latencies_ms else 0.0,
            "api_error": self.error[:500],
        }


def result_text(result: Any) -> str:
    """A tool result as the model reads it (JSON text)."""
    return json.dumps(result, ensure_ascii=False, default=str)


def assistant_message(reply: Reply, calls: list[ToolCall]) -> dict[str, Any]:
    """The reply as it goes back into the conversation (and the transcript): its text, the
    structured calls that are answered, and any reasoning the server returned."""
    out: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        out["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in calls
        ]
    out.update(reply.reasoning)
    return out


class AgentLoop:
    """One episode's turn logic over an :class:`env.Episode` (see the module docstring)."""

    def __init__(self, episode: Episode, settings: LoopSettings, messages: list[dict[str, Any]]) -> None:
        self.episode, self.settings = episode, settings
        self.outcome = Outcome(messages=list(messages))
        self.ended = False
        self.last_reply: dict[str, Any] = {}  # the assistant message of the last reply taken

    @property
    def over(self) -> bool:
        """Whether the episode has ended (``outcome.end_reason`` says why)."""
        if not self.ended and self.episode.finished:
            self.end("max_steps" if self.episode.truncated else "done")
        if not self.ended and self.outcome.turns >= self.settings.max_turns:
            self.end("max_steps")
        return self.ended

    def end(self, reason: str, error: str = "") -> None:
        """End the episode with ``reason`` (one of :data:`END_REASONS`)."""
        self.ended, self.outcome.end_reason = True, reason
        if error:
            self.outcome.error = error

    def take(self, reply: Reply) -> list[dict[str, Any]]:
        """Count ``reply``, run its tool calls in order and return the messages that answer
        it (tool results, or a reminder); the assistant message and these are appended to
        the transcript. Never raises for what a model writes."""
        outcome = self.outcome
        outcome.turns += 1
        outcome.prompt_tokens += reply.prompt_tokens
        outcome.completion_tokens += reply.completion_tokens
        outcome.reasoning_tokens += reply.reasoning_tokens
        outcome.usage_errors += reply.usage_error
        if reply.latency_ms:
            outcome.latencies_ms.append(reply.latency_ms)
        if reply.finish == "length":
            outcome.length_cuts += 1
        calls = list(reply.tool_calls)
        structured = bool(calls)
        if not structured:
            calls = text_calls(reply.content)
            outcome.text_tool_calls += len(calls)
        limit = self.settings.max_calls_per_reply
        if len(calls) > limit:  # answered and kept: the first ``limit``; the rest are dropped
            outcome.malformed_tool_calls += len(calls) - limit
            calls = calls[:limit]
        if structured:
            calls = [c if c.call_id else _with_id(c, outcome.turns, k) for k, c in enumerate(calls)]
        self.last_reply = assistant_message(reply, calls if structured else [])
        outcome.messages.append(self.last_reply)
        if not calls:
            return self._remind(reply)
        outcome.unanswered = 0
        answers = []
        steps = self.episode.steps
        for call in calls:
            if self.episode.finished:
                break
            outcome.malformed_tool_calls += (
                call.arguments is None or not call.name or call.name not in self.episode.tools
            )
            answers.append(_answer(call, _execute(self.episode, call)))
        outcome.call_turns += [outcome.turns] * (self.episode.steps - steps)
        outcome.messages.extend(answers)
        return answers

    def _remind(self, reply: Reply) -> list[dict[str, Any]]:
        """A reply without a tool call: a reminder, unless this reply ends the episode (the
        reminders in a row are used up, or no turn is left to answer one)."""
        outcome = self.outcome
        outcome.unanswered += 1
        if outcome.unanswered > self.settings.max_reminders:
            self.end("no_tool_call")
            return []
        if outcome.turns >= self.settings.max_turns:
            self.end("max_steps")
            return []
        outcome.reminders += 1
        message = {"role": "user", "content": LENGTH_REMINDER if reply.finish == "length" else REMINDER}
        outcome.messages.append(message)
        return [message]


def _with_id(call: ToolCall, turn: int, k: int) -> ToolCall:
    """A structured call the server sent without an id gets one, so its result can answer it."""
    return ToolCall(f"call_{turn}_{k}", call.name, call.arguments, call.problem, call.from_text)


def _execute(episode: Episode, call: ToolCall) -> dict[str, Any]:
    if call.arguments is None:
        problem = call.problem.replace("the arguments ", f"the arguments of {call.name} ", 1)
        return {
            "status": "error",
            "message": f"malformed tool call: {problem if call.name else call.problem}; send the "
            "arguments as one JSON object",
            "data": None,
        }
    if not call.name:
        return {"status": "error", "message": "the tool call names no tool", "data": None}
    return episode.call(call.name, call.arguments)


def _answer(call: ToolCall, result: dict[str, Any]) -> dict[str, Any]:
    """The environment's answer: a ``tool`` message for a structured call, a user message
    (Hermes ``<tool_response>``) for a call written in the text."""
    if not call.from_text:
        return {"role": "tool", "tool_call_id": call.call_id, "content": result_text(result)}
    text = json.dumps({"name": call.name, "result": result}, ensure_ascii=False, default=str)
    return {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}


def parse_reply(data: Any, latency_ms: float = 0.0) -> Reply | str:
    """A :class:`Reply` from a chat-completions response body (a dict), or a message saying
    why it is not one (a reply that cannot be used is an API error, never a crash)."""
    if not isinstance(data, dict):
        return f"the reply is a JSON {type(data).__name__}, not a chat completion object"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "the reply has no choices"
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return "the reply's first choice has no message"
    finish = choices[0].get("finish_reason")
    reply = Reply(
        content=_text(message.get("content")),
        tool_calls=structured_calls(message.get("tool_calls")),
        finish=finish if isinstance(finish, str) else None,
        reasoning={
            key: _text(message[key]) for key in ("reasoning_content", "reasoning") if message.get(key)
        },
        latency_ms=latency_ms,
    )
    _usage(reply, data.get("usage"))
    return reply


def _text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts; cut
    at :data:`MAX_TEXT` characters (the conversation is sent back every turn)."""
    if isinstance(value, list):
        value = "".join(
            part.get("text", "") if isinstance(part, dict) and isinstance(part.get("text"), str) else ""
            for part in value
        )
    if not isinstance(value, str):
        return ""
    if len(value) > MAX_TEXT:
        return f"{value[:MAX_TEXT]}\n[... {len(value) - MAX_TEXT} more characters cut]"
    return value


def _usage(reply: Reply, usage: Any) -> None:
    """The server's token counts; anything but non-negative integers is a usage error."""
    if usage is None:
        return
    if not isinstance(usage, dict):
        reply.usage_error = True
        return
    details = usage.get("completion_tokens_details")
    values = {
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "reasoning_tokens": details.get("reasoning_tokens") if isinstance(details, dict) else None,
    }
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_USAGE:
            reply.usage_error = True
            continue
        setattr(reply, name, value)
