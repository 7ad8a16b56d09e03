"""What the environment says, word for word: tool schemas are read by models (a change to them
is a change to the benchmark), and every message names what was wrong and what is allowed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from pathlib import Path

import pytest

import gridbench
from core.errors import UserError
from gridbench.env import EnvSettings, Episode, openai_schemas
from gridbench.env.tools import ArgumentError, Param
from tests.tiny import ANSWER, ITEMS, OPEN_TASK, TRUTH

TASK = OPEN_TASK
SCHEMAS = Path(__file__).with_name("tool_schemas_toy.json")
QUERY = "query_toy_candidate_from_attribute"
CELL = {"row": 0, "col": 1}


def test_the_tool_schemas_models_read_are_the_reviewed_ones():
    """tests/gridbench/env/tool_schemas_toy.json is the reviewed text; after an intended change to a tool
    description or parameter, write the new one with
    ``python -c "import json; from gridbench.env import openai_schemas; json.dump(openai_schemas('toy'),
    open('tests/gridbench/env/tool_schemas_toy.json', 'w'), indent=1, sort_keys=True)"``."""
    assert openai_schemas("toy") == json.loads(SCHEMAS.read_text())


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("set_slot", {**CELL, "id": "A"}, "cell (0, 1) set to A"),
        ("set_slot", {**CELL, "id": None}, "cell (0, 1) cleared"),
        ("get_slot_id", CELL, ""),
        ("get_hidden_slot_query_budget", CELL, ""),
        ("get_global_check_budget", {}, ""),
        ("get_toy_item_info", {"id": "V00"}, ""),
        ("get_toy_item_attributes", {"ids": "V00", "field": " cost "}, ""),
        (QUERY, {**CELL, "field": "cost", "operator": ">", "value": "-1"}, "4 candidates match"),
        (QUERY, {**CELL, "field": "cost", "operator": "=", "value": 5}, "1 candidate matches"),
        (QUERY, {**CELL, "field": "cost", "operator": ">", "value": 5}, "0 candidates match"),
        ("done", {}, "episode finished with 2 empty hidden cells"),
    ],
)
def test_what_a_valid_call_says(name, arguments, message):
    result = Episode(TASK).call(name, arguments)
    assert (result["status"], result["message"]) == ("ok", message)


def test_item_tools_answer_with_the_items():
    episode = Episode(TASK)
    assert episode.call("get_toy_item_attributes", {"ids": "V00", "field": " cost "})["data"] == {"V00": 2}
    assert episode.call("get_toy_item_info", {"id": " V02 "})["data"] == ITEMS["V02"]


def test_what_the_slot_check_says():
    episode = Episode(TASK)
    episode.call("set_slot", {**CELL, "id": "B"})
    assert episode.call("check_toy_slot_constraints", CELL)["message"] == "a slot constraint fails"
    episode.call("set_slot", {**CELL, "id": "A"})
    assert episode.call("check_toy_slot_constraints", CELL)["message"] == "all slot constraints hold"


CANDIDATES_HINT = "find candidates with query_toy_candidate_from_attribute"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("fly", {}, f"unknown tool 'fly'; tools: {sorted(Episode(TASK).tools)}"),
        ("get_slot_id", {"row": 2, "col": 0}, "cell (2, 0) is outside the 2x3 grid (rows 0..1, cols 0..2)"),
        ("get_slot_id", {"row": 0, "col": 3}, "cell (0, 3) is outside the 2x3 grid (rows 0..1, cols 0..2)"),
        (
            "set_slot",
            {"row": 0, "col": 0, "id": None},
            "cell (0, 0) is fixed, not hidden; hidden cells: [(0, 1), (1, 2)]",
        ),
        ("set_slot", {**CELL, "id": "E"}, f"'E' is not a candidate of cell (0, 1); {CANDIDATES_HINT}"),
        ("check_toy_slot_constraints", {"row": 1, "col": 2}, "cell (1, 2) is empty; set_slot first"),
        (QUERY, {**CELL, "field": "colour", "operator": "=", "value": 1}, "unknown field 'colour'; fields: "),
        (
            QUERY,
            {**CELL, "field": "cost", "operator": "in", "value": [1]},
            "operator 'in' is not allowed on number field 'cost'; allowed: ['>', '>=', '=', '<', '<=']",
        ),
        (
            QUERY,
            {**CELL, "field": "cost", "operator": ">", "value": "X5"},
            "value must be an integer for a number field, got 'X5'",
        ),
        (
            QUERY,
            {**CELL, "field": "color", "operator": "in", "value": [1]},
            "operator 'in' needs a list of categories, got [1]",
        ),
        (
            QUERY,
            {**CELL, "field": "color", "operator": "=", "value": 3},
            "value must be a category string, got 3",
        ),
        (
            "get_toy_item_info",
            {"id": "A"},
            f"'A' is not an item fixed in the grid; candidates are read with {QUERY}",
        ),
        ("get_toy_item_info", {"id": ["V00"]}, "'id' must be a non-empty string, got ['V00']"),
        (
            "get_toy_item_attributes",
            {"ids": ["V00", "nope"], "field": "cost"},
            "not items fixed in the grid: ['nope']",
        ),
    ],
)
def test_what_an_invalid_call_says(name, arguments, message):
    episode = Episode(TASK)
    result = episode.call(name, arguments)
    assert result["status"] == "error" and result["message"].startswith(message), result["message"]
    assert episode.invalid == 1


def test_the_unknown_field_message_lists_the_fields():
    result = Episode(TASK).call(QUERY, {**CELL, "field": "colour", "operator": "=", "value": 1})
    assert result["message"] == "unknown field 'colour'; fields: ['color', 'cost', 'shape', 'weight']"


def test_what_budgets_and_failures_say():
    episode = Episode(TASK, EnvSettings(query_budget=0, check_budget=0))
    spent = episode.call(QUERY, {**CELL, "field": "cost", "operator": ">", "value": 0})
    assert (spent["status"], spent["message"]) == ("budget_exhausted", "no queries left for cell (0, 1)")
    checks = episode.call("check_toy_global_constraints")
    assert (checks["status"], checks["message"]) == ("budget_exhausted", "no global checks left")
    noisy = Episode(TASK, EnvSettings(failure_rate=0.99))
    failed = noisy.call("get_slot_id", CELL)
    assert failed == {
        "status": "failed",
        "message": "the tool failed this time; nothing changed, try again",
        "data": None,
    }


def test_what_the_end_of_an_episode_says():
    done = Episode(TASK)
    done.call("done")
    assert done.call("get_slot_id", CELL)["message"] == "the episode is over (done was called)"
    limited = Episode(TASK, EnvSettings(max_steps=1))
    limited.call("get_slot_id", CELL)
    over = limited.reject("free text")
    assert over["message"] == "the step limit of 1 tool calls is reached; the episode is over"
    assert limited.finished and limited.truncated and (limited.steps, limited.invalid) == (2, 1)
    assert limited.call("get_slot_id", CELL)["message"] == "the episode is over (the step limit was reached)"
    assert limited.invalid == 2
    early = Episode(TASK, EnvSettings(max_steps=1))
    assert early.reject("free text")["message"] == "free text" and not early.finished  # step 1 of 1


def test_an_internal_error_is_one_invalid_call_that_names_the_error():
    items = {**ITEMS, "V00": {k: v for k, v in ITEMS["V00"].items() if k != "weight"}}
    episode = Episode(dataclasses.replace(TASK, items=items))
    result = episode.call("get_toy_item_attributes", {"ids": ["V00"], "field": "weight"})
    assert result == {
        "status": "error",
        "message": "internal error handled: KeyError: 'weight'",
        "data": None,
    }
    assert episode.invalid == 1 and episode.steps == 1


def test_the_failure_draws_come_from_the_documented_seed():
    """The generator is seeded by the first 8 bytes (big-endian) of SHA-256 of
    "task_id|settings.seed|seed", so a run's failures are the same on every machine and
    version; the episode's seed defaults to 0."""
    settings = EnvSettings(failure_rate=0.5, seed=3)
    for seed in (0, 7):
        digest = hashlib.sha256(f"{TASK.task_id}|3|{seed}".encode()).digest()
        draws = random.Random(int.from_bytes(digest[:8], "big"))
        expected = ["failed" if draws.random() < 0.5 else "ok" for _ in range(40)]
        episode = Episode(TASK, settings, seed=seed)
        assert [episode.call("get_slot_id", CELL)["status"] for _ in range(40)] == expected
    default = Episode(TASK, settings)
    zero = Episode(TASK, settings, seed=0)
    assert [default.call("get_slot_id", CELL)["status"] for _ in range(40)] == [
        zero.call("get_slot_id", CELL)["status"] for _ in range(40)
    ]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            EnvSettings(query_budget=-1),
            "query_budget=-1: use 'unlimited', 'paper' or an integer in 0..1000000000",
        ),
        (
            EnvSettings(check_budget="x"),
            "check_budget='x': use 'unlimited', 'paper' or an integer in 0..1000000000",
        ),
        (EnvSettings(failure_rate=1.0), "failure_rate=1.0 must be in [0, 1)"),
        (EnvSettings(check_alpha=-1.0), "check_alpha=-1.0 must be in [0, 1e+06]"),
        (EnvSettings(max_steps=0), "max_steps=0 must be a whole number in 1..1000000000"),
        # beyond any episode (and int64): refused, not carried into a results row
        (
            EnvSettings(query_budget=10**32),
            f"query_budget={10**32}: use 'unlimited', 'paper' or an integer in 0..{10**9}",
        ),
        (
            EnvSettings(check_budget=10**9 + 1),
            "check_budget=1000000001: use 'unlimited', 'paper' or an integer in 0..1000000000",
        ),
        (
            EnvSettings(query_extra=10**12),
            "query_extra=1000000000000 must be a whole number in 0..1000000000",
        ),
        (EnvSettings(seed=-1), "seed=-1 must be a whole number in 0..9223372036854775807"),
        (
            EnvSettings(seed=2**63),
            "seed=9223372036854775808 must be a whole number in 0..9223372036854775807",
        ),
    ],
)
def test_what_a_bad_setting_says(settings, message):
    with pytest.raises(UserError) as error:
        settings.validate()
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("kind", "sent", "message"),
    [
        ("integer", "X5", "'p' must be an integer, got 'X5'"),
        ("string", "  ", "'p' must be a non-empty string, got '  '"),
        ("id_or_null", 5, "'p' must be an item id string or null, got 5"),
        ("id_list", [], "'p' must be a non-empty list of item ids, got []"),
    ],
)
def test_what_a_bad_argument_says(kind, sent, message):
    with pytest.raises(ArgumentError) as error:
        Param("p", kind, "d").coerce(sent)
    assert str(error.value) == message


def test_what_score_says_of_what_it_cannot_read():
    for value, words in ((None, "NoneType"), ("x", "str"), (5, "int")):
        with pytest.raises(UserError) as error:
            gridbench.score(value, TRUTH, ANSWER)
        assert str(error.value) == f"score: task must be a task file's dict, got {words}"
    with pytest.raises(UserError) as error:
        gridbench.score(TASK, TRUTH, 5)
    assert str(error.value) == "score: answer must be an answer file's dict, got int"
