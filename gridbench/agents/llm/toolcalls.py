"""Tool calls out of a chat-completions reply: the structured ``tool_calls``, or -- for servers
and models that write them as text -- Hermes-style ``<tool_call>{...}</tool_call>`` blocks and
bare JSON objects with a name and arguments. Nothing here raises on what a model writes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
MAX_TEXT = 200_000  # characters of a reply searched for text tool calls


@dataclass(frozen=True)
class ToolCall:
    """One call: ``arguments`` is a dict, or None with ``problem`` saying what was wrong."""

    call_id: str | None  # the server's id; None for calls found in the text
    name: str
    arguments: dict[str, Any] | None
    problem: str = ""
    from_text: bool = False


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """(arguments, problem): the argument JSON of a structured call, checked."""
    if raw is None or raw == "":
        return {}, ""
    if isinstance(raw, dict):
        return raw, ""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as error:
        return None, f"the arguments are not valid JSON ({error.__class__.__name__}: {error})"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, ""


def structured_calls(tool_calls: list[Any] | None) -> list[ToolCall]:
    """The calls of a message's ``tool_calls`` (SDK objects or plain dicts)."""
    out = []
    for call in tool_calls or []:
        function = _get(call, "function") or {}
        name = _get(function, "name")
        arguments, problem = parse_arguments(_get(function, "arguments"))
        if not isinstance(name, str) or not name:
            problem = problem or "the tool call has no function name"
            name = ""
        out.append(ToolCall(_get(call, "id"), name, arguments, problem))
    return out


def text_calls(content: str | None) -> list[ToolCall]:
    """Tool calls written in the reply text: ``<tool_call>`` blocks, else one bare JSON object
    (or a list of them) with ``name`` and ``arguments`` (or ``parameters``)."""
    if not content:
        return []
    text = content[:MAX_TEXT]
    blocks = HERMES.findall(text) if "<tool_call>" in text else []
    candidates = blocks or [_strip_fence(text)]
    out = []
    for block in candidates:
        for value in _json_values(block):
            call = _as_call(value)
            if call is not None:
                out.append(call)
        if blocks and not out:
            out.append(
                ToolCall(
                    None,
                    "",
                    None,
                    "a <tool_call> block is not a JSON object with 'name' and 'arguments'",
                    from_text=True,
                )
            )
    return out


def _as_call(value: Any) -> ToolCall | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    raw = value.get("arguments", value.get("parameters", {}))
    arguments, problem = parse_arguments(raw)
    return ToolCall(None, value["name"], arguments, problem, from_text=True)


def _json_values(text: str) -> list[Any]:
    text = text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            return []
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            return []
    return value if isinstance(value, list) else [value]


def _strip_fence(text: str) -> str:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return fenced.group(1) if fenced else text


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
