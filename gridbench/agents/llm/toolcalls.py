"""Tool calls out of a chat-completions reply: the structured ``tool_calls``, or -- for servers
and models that write them as text -- Hermes-style ``<tool_call>{...}</tool_call>`` blocks and
bare JSON objects with a name and arguments. Nothing here raises on what a model writes:
arguments that are not a JSON object, nested too deep or too long are a call with a
``problem`` (answered with an error result and counted as malformed)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
MAX_TEXT = 200_000  # characters of a reply searched for text tool calls
MAX_ARGUMENTS = 100_000  # characters of one call's argument JSON
MAX_DEPTH = 32  # nesting of one call's arguments (a tool takes flat objects)
NOT_JSON = "the arguments are not a valid JSON object"


@dataclass(frozen=True)
class ToolCall:
    """One call: ``arguments`` is a dict, or None with ``problem`` saying what was wrong."""

    call_id: str | None  # the server's id; None for calls found in the text
    name: str
    arguments: dict[str, Any] | None
    problem: str = ""
    from_text: bool = False

    @property
    def arguments_json(self) -> str:
        """The arguments as they go back into the conversation: their JSON text, or ``{}`` for
        arguments that could not be read (a server re-reads the history and may refuse them)."""
        if self.arguments is None:
            return "{}"
        return json.dumps(self.arguments, ensure_ascii=False)


def _depth(value: Any, limit: int) -> int:
    """The nesting depth of ``value``, counted up to ``limit + 1`` (iteratively: never recurses)."""
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """(arguments, problem): the argument JSON of a structured call, checked."""
    if raw is None or raw == "":
        return {}, ""
    if isinstance(raw, str):
        if len(raw) > MAX_ARGUMENTS:
            return None, f"the arguments are longer than {MAX_ARGUMENTS} characters"
        try:
            raw = json.loads(raw)
        except (TypeError, ValueError, RecursionError):
            return None, NOT_JSON
    if not isinstance(raw, dict):
        return None, f"the arguments must be a JSON object, got {type(raw).__name__}"
    if _depth(raw, MAX_DEPTH) > MAX_DEPTH:
        return None, f"the arguments are nested deeper than {MAX_DEPTH} levels"
    return raw, ""


def structured_calls(tool_calls: Any) -> list[ToolCall]:
    """The calls of a message's ``tool_calls`` (SDK objects or plain dicts); an entry that is
    not a call at all is a call with a problem."""
    if not isinstance(tool_calls, list | tuple):
        return [] if tool_calls is None else [ToolCall(None, "", None, "tool_calls is not a list")]
    out = []
    for call in tool_calls:
        function = _get(call, "function") or {}
        name = _get(function, "name")
        arguments, problem = parse_arguments(_get(function, "arguments"))
        if not isinstance(name, str) or not name:
            problem = problem or "the tool call has no function name"
            name = ""
        call_id = _get(call, "id")
        out.append(ToolCall(call_id if isinstance(call_id, str) else None, name[:200], arguments, problem))
    return out


def text_calls(content: str | None) -> list[ToolCall]:
    """Tool calls written in the reply text: ``<tool_call>`` blocks, else one bare JSON object
    (or a list of them) with ``name`` and ``arguments`` (or ``parameters``)."""
    if not content or not isinstance(content, str):
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
    return ToolCall(None, value["name"][:200], arguments, problem, from_text=True)


def _json_values(text: str) -> list[Any]:
    text = text.strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            return []
        try:
            value = json.loads(text[start : end + 1])
        except (ValueError, RecursionError):
            return []
    return value if isinstance(value, list) else [value]


def _strip_fence(text: str) -> str:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return fenced.group(1) if fenced else text


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
