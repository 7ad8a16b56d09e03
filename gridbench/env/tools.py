"""Tool definitions: one definition per tool gives its OpenAI function schema and the
argument checking of the environment. Descriptions are read by models: review them as API."""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass
from typing import Any

from gridbench_core.vocabulary import QueryOp

ECHO_LIMIT = 120  # characters of an agent's input repeated back in an error message
MESSAGE_LIMIT = 1000


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def bounded(value: Any, depth: int = 20, nodes: int = 1000, chars: int = 100_000) -> bool:
    """Whether ``value`` (what an agent sent) nests at most ``depth`` levels, holds at most
    ``nodes`` values and ``chars`` characters of text: then its ``repr`` and its JSON are
    cheap and cannot exhaust the stack. Walked without recursion, stopping early."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    count = text = 0
    while stack:
        node, level = stack.pop()
        count += 1
        if count > nodes or level > depth:
            return False
        if isinstance(node, str | bytes):
            text += len(node)
            if text > chars:
                return False
        elif isinstance(node, dict):
            stack.extend((part, level + 1) for pair in node.items() for part in pair)
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend((item, level + 1) for item in node)
    return True


_BOUNDED_REPR = reprlib.Repr()
_BOUNDED_REPR.maxlevel, _BOUNDED_REPR.maxstring, _BOUNDED_REPR.maxother = 4, ECHO_LIMIT, ECHO_LIMIT


MAX_INT_TEXT = 30  # characters of an integer given as text (an int() of thousands is a ValueError)


def int_text(value: Any) -> int | None:
    """The integer an agent wrote as text (``" 3"``, ``"-2"``), or None when it is not one: ASCII
    digits only, at most :data:`MAX_INT_TEXT` characters -- ``str.isdigit`` also accepts "²",
    which ``int`` refuses, and ``int`` refuses text of more than 4,300 digits, both raising
    where a clear argument error is due."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    digits = text[1:] if text.startswith("-") else text
    if not digits or len(text) > MAX_INT_TEXT or not (digits.isascii() and digits.isdigit()):
        return None
    return int(text)


def bounded_int(name: str, value: int) -> int:
    """``value``, or an :class:`ArgumentError` when it needs more than 64 bits: an integer of
    thousands of digits cannot even be printed in a message (``str`` refuses it)."""
    if value.bit_length() > 64:
        raise ArgumentError(
            f"'{name}' must be an integer of at most 64 bits, got one of {value.bit_length()}"
        )
    return value


def echo(value: Any) -> str:
    """``value`` as an error message repeats it: ``repr``, clipped to :data:`ECHO_LIMIT`
    characters; a value too deep or too large for a full ``repr`` (100,000 nested lists)
    is abbreviated instead, and a ``repr`` that fails is named by its type. Never raises."""
    try:
        return clip(repr(value) if bounded(value) else _BOUNDED_REPR.repr(value))
    except Exception:  # a custom __repr__ that raises, a RecursionError deep inside one
        return f"<{type(value).__name__}>"


class ArgumentError(ValueError):
    """A tool argument is wrong; the message says what was sent and what is allowed."""


@dataclass(frozen=True)
class Param:
    """One parameter of a tool: its JSON Schema and how its argument is checked."""

    name: str
    kind: str  # integer | string | id_or_null | id_list | value
    description: str
    choices: tuple[str, ...] = ()  # the allowed values of a string (a JSON Schema enum)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the parameter."""
        if self.kind == "integer":
            return {"type": "integer", "minimum": 0, "description": self.description}
        if self.kind == "string" and self.choices:
            return {"type": "string", "enum": list(self.choices), "description": self.description}
        if self.kind == "string":
            return {"type": "string", "description": self.description}
        if self.kind == "id_or_null":
            return {"type": ["string", "null"], "description": self.description}
        if self.kind == "id_list":
            return {"type": "array", "items": {"type": "string"}, "description": self.description}
        return {
            "anyOf": [
                {"type": "integer"},
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}},
            ],
            "description": self.description,
        }

    def coerce(self, value: Any) -> Any:
        """Accept what agents commonly send (numbers as strings, lists as JSON strings)."""
        if self.kind == "integer":
            if isinstance(value, bool):
                raise ArgumentError(f"'{self.name}' must be an integer, got a boolean")
            number = int_text(value)
            if isinstance(value, int):
                number = value
            elif isinstance(value, float) and value.is_integer():
                number = int(value)
            if number is None:
                raise ArgumentError(f"'{self.name}' must be an integer, got {echo(value)}")
            return bounded_int(self.name, number)
        if self.kind == "string":
            if isinstance(value, str) and value.strip():
                return value.strip()
            raise ArgumentError(f"'{self.name}' must be a non-empty string, got {echo(value)}")
        if self.kind == "id_or_null":
            if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
                return None
            if isinstance(value, str):
                return value.strip()
            raise ArgumentError(f"'{self.name}' must be an item id string or null, got {echo(value)}")
        if self.kind == "id_list":
            value = _maybe_json(value)
            if isinstance(value, str):
                value = [value]
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return [v.strip() for v in value]
            raise ArgumentError(f"'{self.name}' must be a non-empty list of item ids, got {echo(value)}")
        value = _maybe_json(value)
        if isinstance(value, bool) or value is None or isinstance(value, dict):
            raise ArgumentError(f"'{self.name}' must be a number, a string or a list of strings")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
        except RecursionError:
            raise ArgumentError("the JSON text is nested too deep to read") from None
    return value


# Every tool result: {"status", "message", "data"} (MCP's ``outputSchema``).
RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "enum": ["ok", "error", "failed", "budget_exhausted"],
            "description": "ok; error: the call was invalid, nothing changed or was used; failed: an "
            "injected tool failure, nothing changed, call again; budget_exhausted",
        },
        "message": {"type": "string", "description": "what happened, or what was wrong and what is allowed"},
        "data": {"type": ["object", "null"], "description": "the tool's answer (null when there is none)"},
    },
    "required": ["status", "message", "data"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Tool:
    """One tool an agent can call: its name, the description models read, its parameters,
    and what it does to the episode (``effect``): ``read`` (nothing), ``spend`` (uses a
    budget, changes no cell), ``write`` (changes a cell; the same call again changes nothing
    more) or ``end`` (ends the episode)."""

    name: str
    description: str
    params: tuple[Param, ...] = ()
    effect: str = "read"

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (hints for clients: what the tool changes)."""
        return {
            "title": self.name.replace("_", " "),
            "readOnlyHint": self.effect == "read",
            "destructiveHint": self.effect in ("write", "end"),
            "idempotentHint": self.effect in ("read", "write", "end"),
            "openWorldHint": False,
        }

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI function-calling schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params],
                    "additionalProperties": False,
                },
            },
        }

    def parse(self, arguments: Any) -> dict[str, Any]:
        """Check and coerce the arguments; raises :class:`ArgumentError` naming the problem."""
        arguments = _maybe_json(arguments) if arguments is not None else {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"arguments must be a JSON object, got {type(arguments).__name__}")
        allowed = [p.name for p in self.params]
        extra = sorted(set(arguments) - set(allowed))
        if extra:
            raise ArgumentError(f"unknown argument(s) {echo(extra)}; {self.name} takes {allowed or 'none'}")
        missing = [name for name in allowed if name not in arguments]
        if missing:
            raise ArgumentError(f"missing argument(s) {missing}; {self.name} takes {allowed}")
        return {p.name: p.coerce(arguments[p.name]) for p in self.params}


ROW = Param("row", "integer", "0-based row of the cell")
COL = Param("col", "integer", "0-based column of the cell")


def _fields(domain: str) -> tuple[str, ...]:
    try:
        from domains import get_domain

        return tuple(sorted(a.name for a in get_domain(domain).attributes))
    except ValueError:  # a domain this code does not know: fields are not listed
        return ()


def tools_for(domain: str) -> dict[str, Tool]:
    """The paper's tools, with the domain tools named after ``domain``; the attribute and
    operator parameters list their allowed values."""
    d = domain
    fields = _fields(domain)
    operators = tuple(QueryOp)
    tools = [
        Tool(
            "set_slot",
            "Put a candidate id into an empty (hidden) cell, or clear it with id "
            "null. Only a candidate of that cell is accepted.",
            (ROW, COL, Param("id", "id_or_null", "a candidate id of the cell, or null to clear")),
            "write",
        ),
        Tool(
            "get_current_grid_state",
            "The grid as it is now: fixed ids, your placements, and null for cells still empty.",
        ),
        Tool("get_slot_id", "The id in one cell (fixed or placed by you), or null.", (ROW, COL)),
        Tool(
            "get_hidden_slot_query_budget",
            "How many attribute queries are left for one hidden cell.",
            (ROW, COL),
        ),
        Tool("get_global_check_budget", "How many global constraint checks are left."),
        Tool("done", "Finish the episode. Call it when the grid is complete.", (), "end"),
        Tool(
            f"query_{d}_candidate_from_attribute",
            "Find the candidates of a hidden cell whose attribute matches a condition; returns "
            "their ids with that attribute's value. Uses one query of that cell's budget. "
            "Operators: >, >=, =, <, <= for numbers; =, in, not_in (with a list) for categories.",
            (
                ROW,
                COL,
                Param("field", "string", "attribute name", fields),
                Param(
                    "operator", "string", ">, >=, =, <, <= on numbers; =, in, not_in on categories", operators
                ),
                Param("value", "value", "a number, a category, or a list of categories"),
            ),
            "spend",
        ),
        Tool(
            f"get_{d}_item_info",
            "All attributes of a fixed (visible) item.",
            (Param("id", "string", "id of an item fixed in the grid"),),
        ),
        Tool(
            f"get_{d}_item_attributes",
            "One attribute of several fixed (visible) items.",
            (
                Param("ids", "id_list", "ids of items fixed in the grid"),
                Param("field", "string", "attribute name", fields),
            ),
        ),
        Tool(
            f"check_{d}_slot_constraints",
            "Check the item placed in a hidden cell against that cell's own slot constraints.",
            (ROW, COL),
        ),
        Tool(
            f"check_{d}_global_constraints",
            "Check every global constraint on the grid as it "
            "is now: satisfied, violated, or pending (lower bounds wait for a complete grid), "
            "each by the name the task lists it under; a violated region rule's cells are in "
            "violated_cells. Uses one global check.",
            (),
            "spend",
        ),
    ]
    return {tool.name: tool for tool in tools}


def openai_schemas(domain: str) -> list[dict[str, Any]]:
    """The OpenAI function schemas of every tool for ``domain``."""
    if not isinstance(domain, str):
        from gridbench_core.errors import UserError

        raise UserError(f"openai_schemas: pass a domain name (a str), got {type(domain).__name__}")
    return [tool.openai_schema() for tool in tools_for(domain).values()]
