"""Tool definitions on their own: the JSON Schema of each kind of parameter, the coercion of
what agents send, argument parsing, and clipping of echoed input."""

from __future__ import annotations

import pytest

from gridbench.env.tools import ECHO_LIMIT, ArgumentError, Param, Tool, clip, echo, openai_schemas, tools_for


def test_each_kind_of_parameter_has_its_schema():
    assert Param("row", "integer", "d").schema() == {"type": "integer", "minimum": 0, "description": "d"}
    assert Param("f", "string", "d", ("a", "b")).schema() == {
        "type": "string",
        "enum": ["a", "b"],
        "description": "d",
    }
    assert Param("f", "string", "d").schema() == {"type": "string", "description": "d"}
    assert Param("id", "id_or_null", "d").schema() == {"type": ["string", "null"], "description": "d"}
    assert Param("ids", "id_list", "d").schema() == {
        "type": "array",
        "items": {"type": "string"},
        "description": "d",
    }
    assert Param("v", "value", "d").schema() == {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        "description": "d",
    }


def test_a_tool_schema_lists_every_parameter_as_required_and_nothing_else():
    tool = Tool("t", "does t", (Param("row", "integer", "r"), Param("id", "id_or_null", "i")))
    assert tool.openai_schema() == {
        "type": "function",
        "function": {
            "name": "t",
            "description": "does t",
            "parameters": {
                "type": "object",
                "properties": {
                    "row": Param("row", "integer", "r").schema(),
                    "id": Param("id", "id_or_null", "i").schema(),
                },
                "required": ["row", "id"],
                "additionalProperties": False,
            },
        },
    }


def test_the_toy_tools_list_the_domain_fields_and_operators():
    tools = tools_for("toy")
    query = tools["query_toy_candidate_from_attribute"].openai_schema()["function"]["parameters"][
        "properties"
    ]
    assert query["field"]["enum"] == ["color", "cost", "shape", "weight"]
    assert query["operator"]["enum"] == [">", ">=", "=", "<", "<=", "in", "not_in"]
    assert (
        "enum"
        not in tools_for("nosuchdomain")["get_nosuchdomain_item_attributes"].openai_schema()["function"][
            "parameters"
        ]["properties"]["field"]
    )
    assert [s["function"]["name"] for s in openai_schemas("toy")] == list(tools)


@pytest.mark.parametrize(
    ("kind", "sent", "got"),
    [
        ("integer", 3, 3),
        ("integer", 3.0, 3),
        ("integer", " 12 ", 12),
        ("integer", "-2", -2),
        ("string", "  price ", "price"),
        ("id_or_null", None, None),
        ("id_or_null", "", None),
        ("id_or_null", " NULL ", None),
        ("id_or_null", "None", None),
        ("id_or_null", " T1 ", "T1"),
        ("id_list", ["a", " b "], ["a", "b"]),
        ("id_list", "T1", ["T1"]),
        ("id_list", '["a", "b"]', ["a", "b"]),
        ("value", 4.0, 4),
        ("value", 2.5, 2.5),
        ("value", "red", "red"),
        ("value", '["red", "blue"]', ["red", "blue"]),
        ("value", "[not json", "[not json"),
        ("value", ["x"], ["x"]),
    ],
)
def test_what_agents_commonly_send_is_accepted(kind, sent, got):
    assert Param("p", kind, "d").coerce(sent) == got


@pytest.mark.parametrize(
    ("kind", "sent", "words"),
    [
        ("integer", True, "'p' must be an integer, got a boolean"),
        ("integer", 2.5, "'p' must be an integer, got 2.5"),
        ("integer", "1.5", "'p' must be an integer"),
        ("integer", None, "'p' must be an integer"),
        ("integer", "\u00b2", "'p' must be an integer"),  # round 8: isdigit, and int refuses it
        ("integer", "\u0663", "'p' must be an integer"),  # an Arabic-Indic 3: ASCII digits only
        ("integer", "--1", "'p' must be an integer"),
        ("integer", "1" * 5000, "'p' must be an integer"),  # beyond int()'s 4,300 digits
        pytest.param("integer", 10**100_000, "'p' must be an integer of at most 64 bits", id="huge"),
        ("integer", -(2**64), "'p' must be an integer of at most 64 bits"),
        ("string", "   ", "'p' must be a non-empty string"),
        ("string", 5, "'p' must be a non-empty string"),
        ("id_or_null", 5, "'p' must be an item id string or null"),
        ("id_list", [], "'p' must be a non-empty list of item ids"),
        ("id_list", ["a", 1], "'p' must be a non-empty list of item ids"),
        ("id_list", '{"a": 1}', "'p' must be a non-empty list of item ids"),
        ("value", True, "'p' must be a number, a string or a list of strings"),
        ("value", None, "'p' must be a number"),
        ("value", {"a": 1}, "'p' must be a number"),
        ("value", '{"a": 1}', "'p' must be a number"),
    ],
)
def test_what_cannot_be_read_is_an_argument_error_naming_the_parameter(kind, sent, words):
    with pytest.raises(ArgumentError) as error:
        Param("p", kind, "d").coerce(sent)
    assert words in str(error.value)


def test_parsing_the_arguments_of_a_call():
    tool = Tool("t", "does t", (Param("row", "integer", "r"), Param("col", "integer", "c")))
    assert tool.parse({"row": "1", "col": 2}) == {"row": 1, "col": 2}
    assert tool.parse('{"row": 0, "col": 0}') == {"row": 0, "col": 0}
    assert Tool("none", "takes nothing").parse(None) == {}
    assert Tool("none", "takes nothing").parse("{}") == {}
    for sent, words in (
        ([1, 2], "arguments must be a JSON object, got list"),
        ("[1, 2]", "arguments must be a JSON object, got list"),
        ("row=1", "arguments must be a JSON object, got str"),
        ({"row": 1, "col": 2, "x": 3, "a": 4}, "unknown argument(s) ['a', 'x']; t takes ['row', 'col']"),
        ({"row": 1}, "missing argument(s) ['col']; t takes ['row', 'col']"),
    ):
        with pytest.raises(ArgumentError) as error:
            tool.parse(sent)
        assert words in str(error.value)
    with pytest.raises(ArgumentError, match="takes none"):
        Tool("none", "takes nothing").parse({"x": 1})


def test_clip():
    assert clip("x" * ECHO_LIMIT) == "x" * ECHO_LIMIT
    assert clip("x" * (ECHO_LIMIT + 5)) == "x" * ECHO_LIMIT + "... (5 more characters)"
    assert clip("abcdef", 3) == "abc... (3 more characters)"


def test_each_tool_tells_clients_what_it_changes():
    """The MCP annotations: reads change nothing and may repeat; a placement or the end of the
    episode changes the grid (repeating it changes nothing more); a query or a global check
    spends budget, so repeating it is not the same call."""
    tools = tools_for("toy")
    hints = {
        name: (tools[name].annotations()["readOnlyHint"], tools[name].annotations()["destructiveHint"])
        for name in tools
    }
    assert hints["get_current_grid_state"] == (True, False)
    assert hints["set_slot"] == (False, True) and hints["done"] == (False, True)
    assert hints["query_toy_candidate_from_attribute"] == (False, False)
    assert tools["set_slot"].annotations() == {
        "title": "set slot",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    idempotent = {name for name, tool in tools.items() if tool.annotations()["idempotentHint"]}
    assert idempotent == set(tools) - {"query_toy_candidate_from_attribute", "check_toy_global_constraints"}
    assert (
        tools["done"].annotations()["idempotentHint"]
        and tools["get_slot_id"].annotations()["title"] == "get slot id"
    )
    assert not any(tool.annotations()["openWorldHint"] for tool in tools.values())


def _nested(levels: int, inner=0):
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def test_bounded_counts_depth_values_and_text_exactly():
    from gridbench.env.tools import bounded, echo

    assert bounded(_nested(20)) and not bounded(_nested(21))  # the innermost value at level 20
    deep_dict: object = 0
    for _ in range(10):
        deep_dict = {"k": deep_dict}
    assert bounded(deep_dict, depth=10) and not bounded({"k": deep_dict}, depth=10)
    assert bounded(list(range(999))) and not bounded(list(range(1000)))  # the list is a value too
    assert bounded({str(n): n for n in range(499)}) and not bounded({str(n): n for n in range(500)})
    assert bounded("x" * 100_000) and not bounded("x" * 100_001)
    assert not bounded(["x" * 50_000, b"y" * 50_001]) and bounded(["x" * 50_000, b"y" * 50_000])
    assert not bounded({"k" * 60_000: "v" * 40_001}) and bounded({"k" * 60_000: "v" * 40_000})
    assert bounded((1, {2}, frozenset({3}))) and not bounded((1, 2, 3), nodes=3)
    assert bounded(_nested(3), depth=3) and not bounded(_nested(4), depth=3)
    # echo: the full repr of a bounded value, an abbreviation of one that is not
    assert echo([1, [2, "a"]]) == "[1, [2, 'a']]"
    assert echo(_nested(25)) == repr(_nested(5)).replace("[0]", "[...]")


def test_each_tool_s_effect_is_named():
    """The effect behind the hints: only a query and a global check spend a budget."""
    effects = {name: tool.effect for name, tool in tools_for("toy").items()}
    assert {name for name, effect in effects.items() if effect == "spend"} == {
        "query_toy_candidate_from_attribute",
        "check_toy_global_constraints",
    }
    assert set(effects.values()) == {"read", "spend", "write", "end"}
    assert effects["set_slot"] == "write" and effects["done"] == "end"


def test_an_echo_whose_repr_fails_names_the_type():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")

    assert echo(Hostile()) == "<Hostile>"


def test_json_text_nested_too_deep_is_one_argument_error():
    from gridbench.env.tools import _maybe_json

    with pytest.raises(ArgumentError) as error:
        _maybe_json("[" * 100_000 + "]" * 100_000)
    assert str(error.value) == "the JSON text is nested too deep to read"
