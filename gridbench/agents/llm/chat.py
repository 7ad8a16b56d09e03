"""The agent loop driven by a chat function, for models that are not behind a server: the model
a trainer is training (:func:`hf_chat`, Hugging Face ``transformers``), or any callable.

A *chat function* takes the conversation so far (OpenAI-style message dicts) and the tool
schemas, and returns the model's :class:`Reply`. :func:`play_chat` runs one episode with it
through :class:`gridbench.agents.llm.loop.AgentLoop` -- the loop of ``make eval agent=llm``
and of the Inspect solver: the same prompt, the same reading of tool calls (structured, or
written in the text as ``<tool_call>{...}</tool_call>`` or bare JSON, as small models write
them), the same answers, reminders, limits and counts. :func:`openai_chat` is the chat function
of an OpenAI-compatible server (the same request the runner sends, without its retries).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gridbench.agents.llm.loop import AgentLoop, LoopSettings, Outcome, Reply, parse_reply
from gridbench.agents.llm.prompt import PromptTemplates, load_templates, render
from gridbench.env import Episode, openai_schemas

Chat = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Reply]


def play_chat(
    episode: Episode,
    chat: Chat,
    settings: LoopSettings | None = None,
    templates: PromptTemplates | None = None,
) -> Outcome:
    """Play ``episode`` to its end with ``chat`` through the shared agent loop. An exception of
    the chat function ends the episode with ``end_reason=api_error`` (never a crash)."""
    loop = AgentLoop(
        episode, settings or LoopSettings.from_llm(), render(templates or load_templates(), episode)
    )
    tools = openai_schemas(episode.task.domain)
    while not loop.over:
        try:
            reply = chat(loop.outcome.messages, tools)
        except Exception as error:  # a model that fails is an episode that ends, as a server's
            loop.end("api_error", f"the chat function failed: {type(error).__name__}: {str(error)[:200]}")
            break
        loop.take(reply)
    return loop.outcome


def openai_chat(base_url: str, model: str, api_key: str = "none", **request: Any) -> Chat:
    """The chat function of the OpenAI-compatible server at ``base_url`` (``request``: extra
    request fields such as ``temperature``)."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        start = time.perf_counter()
        body = {**request, "messages": messages, "tools": tools}
        raw = client.chat.completions.with_raw_response.create(model=model, messages=[], extra_body=body)
        reply = parse_reply(raw.http_response.json(), (time.perf_counter() - start) * 1000.0)
        if isinstance(reply, str):
            raise ValueError(reply)
        return reply

    return chat


def hf_chat(model: Any, tokenizer: Any, max_new_tokens: int = 256, **generate: Any) -> Chat:
    """The chat function of a ``transformers`` causal LM and its tokenizer (the model being
    trained): the conversation and tools through the tokenizer's chat template, greedy
    decoding (``generate`` overrides), the completion as text; a reply that fills
    ``max_new_tokens`` is a cut (``finish=length``). Needs torch."""
    import torch

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        start = time.perf_counter()
        prompt = tokenizer.apply_chat_template(
            [_plain(m) for m in messages], tools=tools, add_generation_prompt=True, tokenize=False
        )
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        options = {"max_new_tokens": max_new_tokens, "do_sample": False, **generate}
        if tokenizer.pad_token_id is None:
            options.setdefault("pad_token_id", tokenizer.eos_token_id)
        with torch.no_grad():
            output = model.generate(**inputs, **options)
        new = output[0][inputs["input_ids"].shape[1] :]
        return Reply(
            content=tokenizer.decode(new, skip_special_tokens=True),
            finish="length" if len(new) >= max_new_tokens else "stop",
            prompt_tokens=int(inputs["input_ids"].shape[1]),
            completion_tokens=len(new),
            latency_ms=(time.perf_counter() - start) * 1000.0,
        )

    return chat


def scripted_chat(tasks: Any) -> Chat:
    """A scripted "model" for tests and examples without one: the loopback server's oracle
    (:class:`gridbench.agents.llm.loopback.ScriptedPolicy`) over ``tasks`` (items with
    ``.answer``), one structured call per reply: every truth, then ``done``."""
    from gridbench.agents.llm.loopback import ScriptedPolicy, _task_id
    from gridbench.agents.llm.toolcalls import ToolCall

    policy = ScriptedPolicy(answers=[item.answer for item in tasks])

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        calls = policy.next_calls(_task_id(messages), messages)
        turn = sum(m.get("role") == "assistant" for m in messages)
        return Reply(
            tool_calls=[ToolCall(f"call_{turn}_{k}", name, args) for k, (name, args) in enumerate(calls)],
            finish="tool_calls",
        )

    return chat


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates take it: structured calls' arguments as objects."""
    import json

    calls = message.get("tool_calls")
    if not calls:
        return message
    out = dict(message)
    out["tool_calls"] = [
        {**call, "function": {**call["function"], "arguments": _loads(json, call["function"]["arguments"])}}
        for call in calls
    ]
    return out


def _loads(json: Any, text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {}


__all__ = ["Chat", "hf_chat", "openai_chat", "play_chat", "scripted_chat"]
