"""Tool-call extraction at its exact limits: argument length and nesting (dicts and lists),
names cut to 200 characters, ids that are not strings, a ``tool_calls`` that is not a list,
and reply content that is not text."""

from __future__ import annotations

import json

import pytest

from gridbench.agents.llm.toolcalls import (
    MAX_ARGUMENTS,
    MAX_DEPTH,
    ToolCall,
    parse_arguments,
    structured_calls,
    text_calls,
)


def nested(depth: int, inner: str = "dict") -> dict:
    """An argument object nested ``depth`` levels deep (the object itself is level 1); with
    ``inner="list"`` every even level below the top is a list."""
    value: object = {} if inner == "dict" else []
    for level in range(depth - 1, 0, -1):  # the level of the container that wraps ``value``
        value = {"a": value} if level == 1 or inner == "dict" or level % 2 else [value]
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("inner", ["dict", "list"])
def test_nesting_up_to_the_limit_is_read_and_one_more_level_is_refused(inner):
    deepest = nested(MAX_DEPTH, inner)
    assert parse_arguments(json.dumps(deepest)) == (deepest, "")
    assert parse_arguments(deepest) == (deepest, "")
    too_deep = {"a": nested(MAX_DEPTH, inner)}
    refused = (None, f"the arguments are nested deeper than {MAX_DEPTH} levels")
    assert parse_arguments(json.dumps(too_deep)) == refused
    assert parse_arguments(too_deep) == refused


def test_a_list_of_objects_counts_every_level():
    assert parse_arguments({"a": [{"b": [1]}]}) == ({"a": [{"b": [1]}]}, "")
    deep = {"a": [nested(MAX_DEPTH - 1)]}  # the object, a list, then MAX_DEPTH - 1 levels
    assert parse_arguments(deep)[1] == f"the arguments are nested deeper than {MAX_DEPTH} levels"


def test_argument_json_of_exactly_the_maximum_length_is_read_and_one_more_character_is_not():
    padding = MAX_ARGUMENTS - len('{"p": ""}')
    exact = json.dumps({"p": "x" * padding})
    assert len(exact) == MAX_ARGUMENTS
    assert parse_arguments(exact) == ({"p": "x" * padding}, "")
    longer = json.dumps({"p": "x" * (padding + 1)})
    assert parse_arguments(longer) == (None, f"the arguments are longer than {MAX_ARGUMENTS} characters")


def test_names_are_cut_to_200_characters_in_structured_and_text_calls():
    name = "n" * 250
    (structured,) = structured_calls([{"id": "c1", "function": {"name": name, "arguments": "{}"}}])
    assert structured == ToolCall("c1", "n" * 200, {}, "")
    (written,) = text_calls(json.dumps({"name": name, "arguments": {}}))
    assert written == ToolCall(None, "n" * 200, {}, "", from_text=True)


@pytest.mark.parametrize("call_id", [5, None, ["c"], {"id": "c"}])
def test_an_id_that_is_not_a_string_is_dropped(call_id):
    (call,) = structured_calls([{"id": call_id, "function": {"name": "done", "arguments": "{}"}}])
    assert call == ToolCall(None, "done", {}, "")


@pytest.mark.parametrize("tool_calls", ["set_slot", 5, {"function": {"name": "done"}}])
def test_tool_calls_that_are_not_a_list_are_one_call_with_a_problem(tool_calls):
    assert structured_calls(tool_calls) == [ToolCall(None, "", None, "tool_calls is not a list")]
    assert structured_calls(None) == []
    assert structured_calls(()) == []


@pytest.mark.parametrize("content", [None, "", 5, ["<tool_call>{}</tool_call>"], {"name": "done"}])
def test_reply_content_that_is_not_text_holds_no_call(content):
    assert text_calls(content) == []
