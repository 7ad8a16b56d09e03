"""Tool calls out of a model's reply, unit by unit: structured ``tool_calls`` (SDK objects and
dicts) and calls written in the text (Hermes blocks, bare JSON, lists, fences), with every
malformed shape a model produces answered by a problem, never an exception."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridbench.agents.llm.toolcalls import MAX_TEXT, ToolCall, parse_arguments, structured_calls, text_calls

SET = {"name": "set_slot", "arguments": {"row": 1, "col": 2, "id": "T1"}}
DONE = {"name": "done", "arguments": {}}


def _block(call) -> str:
    return f"<tool_call>{json.dumps(call)}</tool_call>"


def _text(name, arguments) -> ToolCall:
    return ToolCall(None, name, arguments, "", from_text=True)


def test_several_blocks_in_one_reply_are_all_read_in_order():
    third = _block({"name": "get_slot_id", "arguments": {}})
    reply = f"I will set it.\n{_block(SET)}\nthen\n{_block(DONE)}\n{third}"
    assert text_calls(reply) == [
        _text("set_slot", SET["arguments"]),
        _text("done", {}),
        _text("get_slot_id", {}),
    ]


def test_an_unterminated_block_is_still_read():
    assert text_calls("thinking...\n<tool_call>\n" + json.dumps(SET)) == [_text("set_slot", SET["arguments"])]
    assert text_calls(_block(DONE) + "<tool_call>" + json.dumps(SET)) == [
        _text("done", {}),
        _text("set_slot", SET["arguments"]),
    ]


def test_a_json_list_of_calls_gives_every_call():
    assert text_calls(json.dumps([SET, DONE])) == [_text("set_slot", SET["arguments"]), _text("done", {})]
    assert text_calls(f"<tool_call>{json.dumps([SET, DONE])}</tool_call>") == [
        _text("set_slot", SET["arguments"]),
        _text("done", {}),
    ]


def test_parameters_is_read_as_arguments_and_arguments_win():
    assert text_calls(json.dumps({"name": "get_slot_id", "parameters": {"row": 0, "col": 1}})) == [
        _text("get_slot_id", {"row": 0, "col": 1})
    ]
    both = {"name": "done", "arguments": {"a": 1}, "parameters": {"b": 2}}
    assert text_calls(json.dumps(both)) == [_text("done", {"a": 1})]
    assert text_calls(json.dumps({"name": "done"})) == [_text("done", {})]


@pytest.mark.parametrize("arguments", ["[1, 2]", "3", '"text"', "true", "null"])
def test_arguments_that_are_json_but_not_an_object_are_a_problem(arguments):
    (call,) = text_calls(json.dumps({"name": "set_slot", "arguments": arguments}))
    assert call.name == "set_slot" and call.arguments is None and call.from_text
    assert "must be a JSON object, got" in call.problem


@pytest.mark.parametrize("arguments", [[1, 2], 3, True])
def test_arguments_that_are_neither_an_object_nor_text_are_a_problem(arguments):
    (call,) = text_calls(json.dumps({"name": "set_slot", "arguments": arguments}))
    assert call.name == "set_slot" and call.arguments is None and call.problem


def test_arguments_given_as_a_json_string_are_parsed():
    call = {"name": "set_slot", "arguments": json.dumps(SET["arguments"])}
    assert text_calls(json.dumps(call)) == [_text("set_slot", SET["arguments"])]
    (bad,) = text_calls(json.dumps({"name": "set_slot", "arguments": "{row: 1"}))
    assert bad.arguments is None and "not a valid JSON object" in bad.problem


def test_a_block_that_is_not_a_call_is_one_problem_the_model_can_fix():
    for reply in (
        "<tool_call>not json</tool_call>",
        "<tool_call>{}</tool_call>",
        "<tool_call>[1, 2]</tool_call>",
    ):
        (call,) = text_calls(reply)
        assert call == ToolCall(
            None,
            "",
            None,
            "a <tool_call> block is not a JSON object with 'name' and 'arguments'",
            from_text=True,
        )
    # a bad block before a good one: its problem, then the good call
    bad, good = text_calls("<tool_call>oops</tool_call>" + _block(DONE))
    assert bad.problem and bad.arguments is None and good == _text("done", {})


def test_bare_json_in_prose_or_a_fence_is_read_and_plain_text_is_not_a_call():
    assert text_calls(f"Sure! {json.dumps(SET)} Let me know.") == [_text("set_slot", SET["arguments"])]
    assert text_calls(f"```json\n{json.dumps(DONE)}\n```") == [_text("done", {})]
    assert text_calls(f"```\n{json.dumps(DONE)}\n```") == [_text("done", {})]
    for reply in (
        None,
        "",
        "I think the answer is 42.",
        "{not json}",
        "} backwards {",
        '{"row": 1}',
        '{"name": 5}',
    ):
        assert text_calls(reply) == []


def test_only_the_first_max_text_characters_are_searched():
    assert text_calls("x" * (MAX_TEXT - 60) + _block(DONE)) == [_text("done", {})]
    assert text_calls("x" * MAX_TEXT + _block(DONE)) == []


def test_structured_calls_from_sdk_objects_and_dicts():
    sdk = SimpleNamespace(
        id="c1", function=SimpleNamespace(name="set_slot", arguments=json.dumps(SET["arguments"]))
    )
    plain = {"id": "c2", "function": {"name": "done", "arguments": ""}}
    no_args = {"id": "c3", "function": {"name": "done", "arguments": None}}
    given_dict = {"id": "c4", "function": {"name": "done", "arguments": {"x": 1}}}
    assert structured_calls([sdk, plain, no_args, given_dict]) == [
        ToolCall("c1", "set_slot", SET["arguments"]),
        ToolCall("c2", "done", {}),
        ToolCall("c3", "done", {}),
        ToolCall("c4", "done", {"x": 1}),
    ]
    assert structured_calls(None) == [] and structured_calls([]) == []


def test_structured_calls_with_problems():
    bad_json, not_object, nameless, no_function = structured_calls(
        [
            {"id": "a", "function": {"name": "set_slot", "arguments": "{'row': 1}"}},
            {"id": "b", "function": {"name": "set_slot", "arguments": "[1]"}},
            {"id": "c", "function": {"name": "", "arguments": "{}"}},
            {"id": "d"},
        ]
    )
    assert bad_json.arguments is None and bad_json.problem.startswith("the arguments are not a valid JSON")
    assert not_object.problem == "the arguments must be a JSON object, got list"
    assert (nameless.name, nameless.problem, nameless.arguments) == (
        "",
        "the tool call has no function name",
        {},
    )
    assert (no_function.call_id, no_function.name, no_function.problem) == (
        "d",
        "",
        "the tool call has no function name",
    )
    (both,) = structured_calls([{"id": "e", "function": {"name": None, "arguments": "{"}}])
    assert both.name == "" and both.problem.startswith("the arguments are not a valid JSON")
    assert not any(call.from_text for call in structured_calls([{"function": {"name": "done"}}]))


def test_parse_arguments():
    assert parse_arguments(None) == ({}, "") and parse_arguments("") == ({}, "")
    assert parse_arguments({"a": 1}) == ({"a": 1}, "")
    assert parse_arguments('{"a": 1}') == ({"a": 1}, "")
    assert parse_arguments("[1]") == (None, "the arguments must be a JSON object, got list")
    assert parse_arguments(7)[0] is None  # not a string at all


@given(st.text(max_size=300))
def test_any_text_gives_calls_and_never_raises(text):
    for call in text_calls(text) + text_calls("<tool_call>" + text):
        assert call.from_text and call.call_id is None and isinstance(call.name, str)
        assert (call.arguments is None) == bool(call.problem)


def test_a_json_object_with_text_right_after_it_is_read():
    """The object is cut out exactly, from its first brace to its last: prose straight after
    it, or after an object that opens the reply, is not part of it."""
    assert text_calls(json.dumps(DONE) + " I hope that helps.") == [_text("done", {})]
    assert text_calls(f"Call: {json.dumps(SET)}.") == [_text("set_slot", SET["arguments"])]


def test_a_fenced_multiline_list_of_calls_is_read_whole():
    fenced = "Here:\n```json\n" + json.dumps([SET, DONE], indent=2) + "\n```\nDone."
    assert text_calls(fenced) == [_text("set_slot", SET["arguments"]), _text("done", {})]


def test_sdk_objects_without_an_id_or_arguments_attribute():
    partial = SimpleNamespace(function=SimpleNamespace(name="done"))
    assert structured_calls([partial]) == [ToolCall(None, "done", {})]
