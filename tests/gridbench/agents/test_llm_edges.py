"""The runner and the agent loop at their edges (hostile round 4 and the planted bugs it let
through), against an in-process server (``httpx2.MockTransport``): exact counts, no network.

- a server's words (a 401's message, a 500's) reach the terminal and the rows escaped;
- token counts past any context are usage errors, so an episode's sums stay inside int64, and
  a row that could not be read back is refused loudly instead of replayed on every resume;
- the last attempt is not retried: ``max_retries=N`` is N retries and N + 1 requests;
- tool calls after ``done()`` in one reply are neither run nor answered.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from gridbench.agents.llm.loop import MAX_USAGE, AgentLoop, LoopSettings, Reply, parse_reply
from gridbench.agents.llm.prompt import load_templates
from gridbench.agents.llm.runner import AuthenticationStop, LLMAgent
from gridbench.agents.llm.toolcalls import ToolCall
from gridbench.env import EnvSettings, Episode
from gridbench_core.errors import UserError
from gridbench_core.llm_settings import LLMSettings
from tests.tiny import TASK

ESCAPES = "\x1b[2J\x1b[31mpwned\x1b]0;title\x07\r\nnext line\u202eevil"


def _settings(**values: Any) -> LLMSettings:
    base = {"model": "m", "base_url": "http://server.invalid/v1", "max_retries": 0, "timeout": 5.0}
    return LLMSettings.from_yaml_defaults(**{**base, **values})


def _agent(handler, **values: Any) -> LLMAgent:
    import openai  # half a second to import: the test worker that runs none of these never pays it

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = openai.AsyncOpenAI(
        api_key="sk-any", base_url="http://server.invalid/v1", max_retries=0, http_client=http
    )
    return LLMAgent(_settings(**values), load_templates(), client)


def _play(agent: LLMAgent):
    return asyncio.run(agent.play(Episode(TASK, EnvSettings(), seed=0)))


def _completion(calls: list[tuple[str, dict]], usage: dict | None = None) -> dict:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for k, (name, args) in enumerate(calls)
        ],
    }
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
    body["choices"] = [{"index": 0, "message": message, "finish_reason": "tool_calls"}]
    if usage is not None:
        body["usage"] = usage
    return body


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\n" not in text, text
    assert "\\x1b" in text  # shown, escaped


def test_a_refused_key_s_message_is_shown_escaped():
    def handler(request):
        return httpx2.Response(401, json={"error": {"message": ESCAPES, "type": "auth"}})

    with pytest.raises(AuthenticationStop) as stopped:
        _play(_agent(handler))
    _clean(str(stopped.value))


def test_a_server_error_s_message_is_recorded_escaped():
    def handler(request):
        return httpx2.Response(500, json={"error": {"message": ESCAPES}})

    outcome = _play(_agent(handler))
    assert outcome.end_reason == "api_error"
    _clean(outcome.error)


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_the_last_attempt_is_never_retried(retries):
    """``max_retries=N``: N retries, N + 1 requests, and the episode ends in api_error with
    exactly N counted (one retry too many is a request the server never saw counted)."""
    seen = []

    def handler(request):
        seen.append(request)
        return httpx2.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "0"})

    outcome = _play(_agent(handler, max_retries=retries))
    assert outcome.end_reason == "api_error" and "503" in outcome.error
    assert outcome.api_retries == retries and len(seen) == retries + 1


def test_a_retry_that_succeeds_counts_once():
    seen = []

    def handler(request):
        seen.append(request)
        if len(seen) == 1:
            return httpx2.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "0"})
        return httpx2.Response(200, json=_completion([("done", {})]))

    outcome = _play(_agent(handler, max_retries=1))
    assert outcome.end_reason == "done" and outcome.api_retries == 1 and len(seen) == 2


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": MAX_USAGE + 1, "completion_tokens": 1},
        {"prompt_tokens": 1, "completion_tokens": 2**63},
        {
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "completion_tokens_details": {"reasoning_tokens": 2**62},
        },
    ],
)
def test_token_counts_past_any_context_are_usage_errors(usage):
    reply = parse_reply(_completion([("done", {})], usage))
    assert isinstance(reply, Reply) and reply.usage_error
    assert max(reply.prompt_tokens, reply.completion_tokens, reply.reasoning_tokens) <= MAX_USAGE


def test_an_episode_s_token_sums_stay_inside_int64_whatever_the_server_says():
    """A reply may count at most MAX_USAGE tokens of each kind (2**53 - 1 passed before: 1,024
    such replies overflowed int64, and the row was skipped on every resume); an episode has at
    most a million turns, so its sums stay far inside int64."""
    reply = parse_reply(_completion([("done", {})], {"prompt_tokens": 2**53 - 1, "completion_tokens": 7}))
    assert isinstance(reply, Reply) and reply.usage_error
    assert reply.prompt_tokens == 0 and reply.completion_tokens == 7  # the good count is kept
    most_turns = 1_000_000  # LLMSettings refuses max_steps beyond it
    with pytest.raises(UserError, match="max_steps"):
        _settings(max_steps=most_turns + 1).validate()
    assert 3 * most_turns * MAX_USAGE < 2**63
    loop, _ = _loop(max_turns=5)
    for _ in range(3):
        loop.take(Reply(prompt_tokens=MAX_USAGE, completion_tokens=MAX_USAGE, reasoning_tokens=MAX_USAGE))
    assert loop.outcome.prompt_tokens == 3 * MAX_USAGE and loop.outcome.usage_errors == 0


def test_a_row_that_would_not_read_back_is_refused_not_written(tmp_path):
    from pipeline.evaluation.runs import RunStore

    store = RunStore(tmp_path / "run")
    row = {"episode_id": "0123456789abcdef", "task_id": "t", "prompt_tokens": 2**64}
    with pytest.raises(UserError, match="cannot be kept"):
        store.save(row, [])
    assert not store.episodes.exists() and not list((tmp_path / "run").rglob("*.gz"))


def _loop(max_turns: int = 10) -> tuple[AgentLoop, Episode]:
    episode = Episode(TASK, EnvSettings(), seed=0, record=True)
    return AgentLoop(episode, LoopSettings(max_turns=max_turns, max_reminders=2), []), episode


@pytest.mark.parametrize("structured", [True, False])
def test_calls_after_done_in_one_reply_are_neither_run_nor_answered(structured):
    loop, episode = _loop()
    calls = [
        ToolCall("c0", "set_slot", {"row": 0, "col": 1, "id": "C"}, "", not structured),
        ToolCall("c1", "done", {}, "", not structured),
        ToolCall("c2", "set_slot", {"row": 1, "col": 2, "id": "G"}, "", not structured),
        ToolCall("c3", "get_current_grid_state", {}, "", not structured),
    ]
    answers = loop.take(Reply(tool_calls=calls) if structured else Reply(content=_as_text(calls)))
    assert len(answers) == 2  # set_slot and done; nothing after done
    assert episode.grid[1][2] is None and episode.grid[0][1] == "C"
    assert loop.over and loop.outcome.end_reason == "done"
    assert [t["tool"] for t in episode.trace] == ["set_slot", "done"]


def _as_text(calls: list[ToolCall]) -> str:
    return "\n".join(
        f"<tool_call>{json.dumps({'name': c.name, 'arguments': c.arguments})}</tool_call>" for c in calls
    )


def test_a_reply_after_the_episode_ended_is_not_run():
    loop, episode = _loop()
    loop.take(Reply(tool_calls=[ToolCall("c0", "done", {}, "", False)]))
    answers = loop.take(
        Reply(tool_calls=[ToolCall("c1", "set_slot", {"row": 0, "col": 1, "id": "C"}, "", False)])
    )
    assert answers == [] and episode.grid[0][1] is None
