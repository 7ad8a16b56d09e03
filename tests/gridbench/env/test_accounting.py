"""Environment accounting on a small hand-built task whose every value is known: what each call
spends and counts (budgets, invalid calls, injected failures, steps), query operators on the
boundary value against a direct definition, and the global check on partial grids."""

from __future__ import annotations

import operator

import pytest

from gridbench.env import UNLIMITED, EnvSettings, Episode
from gridbench_core.errors import UserError
from solvers.checker import check_global
from tests.tiny import ITEMS
from tests.tiny import OPEN_TASK as TASK

QUERY = "query_toy_candidate_from_attribute"
CHECK = "check_toy_global_constraints"
CELL = {"row": 0, "col": 1}


def _query(episode: Episode, field: str = "cost", op: str = ">=", value=0, cell=CELL) -> dict:
    return episode.call(QUERY, {**cell, "field": field, "operator": op, "value": value})


@pytest.mark.parametrize("seed", range(6))
def test_an_injected_failure_spends_no_budget_and_is_not_an_invalid_call(seed):
    episode = Episode(TASK, EnvSettings(query_budget=2, check_budget=2, failure_rate=0.6), seed=seed)
    spent = {"query": 0, "check": 0}
    statuses = []
    for n in range(40):
        name = "query" if n % 2 else "check"
        result = _query(episode) if name == "query" else episode.call(CHECK)
        statuses.append(result["status"])
        if result["status"] == "ok":
            spent[name] += 1
        assert episode.queries_left[(0, 1)] == 2 - spent["query"]
        assert episode.checks_left == 2 - spent["check"]
        assert (episode.queries_used, episode.checks_used) == (spent["query"], spent["check"])
        assert episode.invalid == 0 and episode.steps == n + 1
        assert episode.failures == statuses.count("failed")
    assert spent == {"query": 2, "check": 2}
    assert "failed" in statuses and "budget_exhausted" in statuses


@pytest.mark.parametrize("seed", range(20))
def test_done_never_fails_even_when_almost_every_call_does(seed):
    episode = Episode(TASK, EnvSettings(failure_rate=0.99), seed=seed)
    assert episode.call("get_global_check_budget")["status"] == "failed"
    result = episode.call("done")
    assert result["status"] == "ok" and result["data"] == {"empty": 2}
    assert episode.finished and not episode.truncated and episode.failures == 1


def test_a_failed_call_changes_nothing():
    episode = Episode(TASK, EnvSettings(failure_rate=0.99), seed=1)
    result = episode.call("set_slot", {**CELL, "id": "A"})
    assert result["status"] == "failed" and result["data"] is None
    assert episode.grid == [list(row) for row in TASK.grid]


OPS = {">": operator.gt, ">=": operator.ge, "=": operator.eq, "<": operator.lt, "<=": operator.le}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("field", ["cost", "weight"])
def test_numeric_queries_match_their_definition_on_every_boundary(op, field):
    """Every value a candidate has, and one past each end, is queried: the boundary candidates
    are in the answer exactly when the operator includes equality."""
    episode = Episode(TASK)
    for cell in ((0, 1), (1, 2)):
        slot = next(s for s in TASK.slots if (s.row, s.col) == cell)
        values = {ITEMS[i][field] for i in slot.candidates}
        for value in sorted(values | {min(values) - 1, max(values) + 1}):
            result = _query(episode, field, op, value, {"row": cell[0], "col": cell[1]})
            expected = [
                {"id": i, field: ITEMS[i][field]} for i in slot.candidates if OPS[op](ITEMS[i][field], value)
            ]
            assert result["status"] == "ok" and result["data"]["candidates"] == expected, (cell, op, value)
            noun = "candidate matches" if len(expected) == 1 else "candidates match"
            assert result["message"] == f"{len(expected)} {noun}"


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("=", "red", ["A", "D"]),
        ("=", "purple", []),
        ("in", ["blue", "green"], ["B", "C"]),
        ("in", "blue", ["B"]),
        ("not_in", ["red"], ["B", "C"]),
        ("not_in", "green", ["A", "B", "D"]),
    ],
)
def test_category_queries(op, value, expected):
    result = _query(Episode(TASK), "color", op, value)
    assert result["status"] == "ok"
    assert result["data"]["candidates"] == [{"id": i, "color": ITEMS[i]["color"]} for i in expected]


@pytest.mark.parametrize(
    ("field", "op", "value", "words"),
    [
        ("cost", "in", [1], "not allowed on number field"),
        ("color", ">", "red", "not allowed on category field"),
        ("cost", ">=", "three", "must be an integer"),
        ("cost", ">=", True, "must be a number"),
        ("cost", ">=", 2.5, "must be an integer"),
        # round 8: text that str.isdigit accepts and int refuses was an internal error
        ("cost", ">=", "\u00b2", "must be an integer"),
        ("cost", ">=", "--1", "must be an integer"),
        ("cost", ">=", "9" * 5000, "must be an integer"),
        pytest.param("cost", ">=", 10**5000, "must be an integer of at most 64 bits", id="huge"),
        ("color", "in", [1, 2], "needs a list of categories"),
        ("color", "=", 3, "must be a category string"),
    ],
)
def test_a_bad_query_is_invalid_and_spends_nothing(field, op, value, words):
    episode = Episode(TASK, EnvSettings(query_budget=1))
    result = _query(episode, field, op, value)
    assert result["status"] == "error" and words in result["message"]
    assert (episode.invalid, episode.queries_used, episode.queries_left[(0, 1)]) == (1, 0, 1)
    assert _query(episode, "cost", ">=", "-1")["status"] == "ok"  # numbers sent as text are read
    assert episode.queries_left[(0, 1)] == 0 and episode.queries_left[(1, 2)] == 1


def test_the_global_check_on_partial_and_complete_grids():
    """Nothing violated is not success: ``all_satisfied`` needs a complete grid."""
    episode = Episode(TASK)
    empty = episode.call(CHECK)["data"]
    assert empty == {
        "rules": {"total_cost_max": "satisfied", "total_weight_min": "pending", "blue_max": "satisfied"},
        "violated": [],
        "violated_cells": {},
        "complete": False,
        "all_satisfied": False,
    }
    episode.call("set_slot", {**CELL, "id": "C"})
    half = episode.call(CHECK)
    assert half["data"]["complete"] is False and half["data"]["all_satisfied"] is False
    assert half["message"] == "no rule violated"
    episode.call("set_slot", {"row": 1, "col": 2, "id": "G"})
    full = episode.call(CHECK)["data"]
    assert full["complete"] is True and full["all_satisfied"] is True
    assert full["rules"] == check_global(TASK, episode.grid)
    episode.call("set_slot", {**CELL, "id": "B"})  # blue twice (V02 and B), cost 15 > 14
    broken = episode.call(CHECK)
    assert (
        broken["data"]["violated"] == ["blue_max", "total_cost_max"] and not broken["data"]["all_satisfied"]
    )
    assert broken["message"] == "2 violated: blue_max, total_cost_max"
    assert broken["data"]["violated_cells"] == {}  # neither is a region
    assert episode.checks_used == 4 and episode.checks_left == UNLIMITED


def test_a_violated_region_rule_names_its_cells_and_the_prompt_the_same_rule():
    """Issue 26: the prompt lists every rule under the identifier the global check reports it
    by, and a violated region rule comes with its cells."""
    from gridbench_core.budgets import EnvSettings
    from gridbench_core.prompt import packaged_templates, render_task
    from pipeline.generation import GenerationSettings, TaskKey, generate_task

    made = generate_task(TaskKey("course", 5, 7, 11, 15, 25, seed=2), GenerationSettings(cage_bits=0.0))
    task, answer = made.task, made.answer
    episode = Episode(task)
    for (row, col), item in answer.truth_choice().items():
        episode.call("set_slot", {"row": row, "col": col, "id": item})
    check = f"check_{task.domain}_global_constraints"
    regions = {rule.name: rule for rule in task.global_constraints if rule.scope == "cells"}
    broken = None
    for role in answer.roles:  # a decoy in a region that breaks the region's rule
        for item in role.decoys:
            episode.call("set_slot", {"row": role.row, "col": role.col, "id": item})
            result = episode.call(check)["data"]
            if set(result["violated"]) & set(regions):
                broken = result
                break
            episode.call("set_slot", {"row": role.row, "col": role.col, "id": role.truth})
        if broken:
            break
    assert broken is not None, "no decoy breaks a region rule"
    named = {name: regions[name] for name in broken["violated"] if name in regions}
    assert broken["violated_cells"] == {name: [list(c) for c in rule.cells] for name, rule in named.items()}
    prompt = "\n".join(m["content"] for m in render_task(packaged_templates(), task, EnvSettings()))
    for name in broken["violated"]:
        assert f") {name}: " in prompt


def test_the_grid_tools_and_the_slot_check():
    episode = Episode(TASK)
    state = episode.call("get_current_grid_state")
    assert (
        state["data"]["empty_cells"] == [[0, 1], [1, 2]] and state["message"] == "2 hidden cells still empty"
    )
    assert episode.call("set_slot", {**CELL, "id": "B"})["data"] == {"row": 0, "col": 1, "id": "B"}
    assert episode.call("get_slot_id", CELL)["data"]["id"] == "B"
    assert episode.call("get_slot_id", {"row": 1, "col": 0})["data"]["id"] == "V10"  # a fixed cell
    slot_check = episode.call("check_toy_slot_constraints", CELL)["data"]
    assert slot_check["satisfied"] is False and [c["satisfied"] for c in slot_check["constraints"]] == [False]
    episode.call("set_slot", {**CELL, "id": "A"})
    assert episode.call("check_toy_slot_constraints", CELL)["data"]["satisfied"] is True
    cleared = episode.call("set_slot", {**CELL, "id": None})
    assert cleared["status"] == "ok" and episode.grid[0][1] is None
    assert episode.call("get_current_grid_state")["data"]["grid"] == [
        ["V00", None, "V02"],
        ["V10", "V11", None],
    ]
    info = episode.call("get_toy_item_info", {"id": "V11"})
    assert info["data"] == ITEMS["V11"]
    attributes = episode.call("get_toy_item_attributes", {"ids": ["V00", "V10"], "field": "weight"})
    assert attributes["data"] == {"V00": 3, "V10": 2}
    assert episode.invalid == 0 and episode.steps == 11


def test_budgets_from_the_paper_formula_floor_and_count_down():
    settings = EnvSettings(query_budget="paper", query_extra=3, check_budget="paper", check_alpha=1.5)
    episode = Episode(TASK, settings)
    assert episode.queries_left == {(0, 1): 1 + 2 + 3, (1, 2): 2 + 2 + 3}
    assert episode.checks_left == 3  # floor(1.5 * 2)
    assert Episode(TASK, EnvSettings(check_budget="paper", check_alpha=0.75)).checks_left == 1
    assert Episode(TASK, EnvSettings(check_budget="paper", check_alpha=0.49)).checks_left == 0
    assert Episode(TASK, EnvSettings(query_budget=0)).queries_left == {(0, 1): 0, (1, 2): 0}
    _query(episode)
    assert episode.call("get_hidden_slot_query_budget", CELL)["data"] == {"remaining": 5, "unlimited": False}
    free = Episode(TASK)
    for _ in range(3):
        _query(free)
    assert free.call("get_hidden_slot_query_budget", CELL)["data"] == {"remaining": None, "unlimited": True}
    assert free.call("get_global_check_budget")["data"] == {"remaining": None, "unlimited": True}
    assert free.queries_used == 3


def test_no_check_budget_means_no_check_but_other_tools_work():
    episode = Episode(TASK, EnvSettings(check_budget=0, query_budget=0))
    assert episode.call(CHECK)["status"] == "budget_exhausted"
    assert _query(episode)["status"] == "budget_exhausted"
    assert episode.call("get_slot_id", CELL)["status"] == "ok"
    assert (episode.checks_used, episode.queries_used, episode.invalid) == (0, 0, 0)


@pytest.mark.parametrize(
    "settings",
    [
        EnvSettings(failure_rate=1.0),
        EnvSettings(failure_rate=-0.1),
        EnvSettings(query_budget=-1),
        EnvSettings(check_budget="some"),
        EnvSettings(query_budget=2.5),  # type: ignore[arg-type]
        EnvSettings(check_alpha=-0.5),
        EnvSettings(query_extra=-1),
        EnvSettings(max_steps=0),
    ],
)
def test_invalid_settings_are_user_errors(settings):
    with pytest.raises(UserError):
        Episode(TASK, settings)


def test_settings_on_their_edges_are_accepted():
    for settings in (
        EnvSettings(failure_rate=0.0, query_budget=0, check_budget=0, max_steps=1, check_alpha=0.0),
        EnvSettings(query_budget="paper", check_budget="unlimited", failure_rate=0.999),
    ):
        Episode(TASK, settings)


def test_the_step_limit_counts_every_call_and_rejects():
    episode = Episode(TASK, EnvSettings(max_steps=3))
    assert episode.call("get_slot_id", CELL)["status"] == "ok"
    assert episode.reject("free text")["status"] == "error"
    assert episode.call("nope")["status"] == "error"
    assert (episode.steps, episode.invalid, episode.finished) == (3, 2, False)
    over = episode.call("get_slot_id", CELL)
    assert over["status"] == "error" and "step limit of 3" in over["message"]
    assert episode.finished and episode.truncated and episode.invalid == 3
    late = episode.call("get_slot_id", CELL)
    assert "the step limit was reached" in late["message"] and episode.invalid == 4


def test_after_done_every_call_is_an_error():
    episode = Episode(TASK)
    episode.call("done")
    result = episode.call("get_slot_id", CELL)
    assert result["status"] == "error" and "done was called" in result["message"]
    assert episode.invalid == 1 and not episode.truncated and episode.calls["get_slot_id"] == 1


def test_a_recorded_episode_traces_every_call_as_sent():
    episode = Episode(TASK, record=True)
    episode.call("get_slot_id", CELL)
    episode.call("get_slot_id", '{"row": 0, "col": 1}')
    episode.call(["not", "a", "name"], [1, 2])
    episode.call("done", None)
    episode.reject("free text", raw=b"\x00bytes")
    assert episode.trace is not None and len(episode.trace) == 5
    first, text, odd, done, rejected = episode.trace
    assert first == {"tool": "get_slot_id", "arguments": CELL, "result": first["result"]}
    assert first["result"]["data"] == {"row": 0, "col": 1, "id": None}
    assert text["arguments"] == '{"row": 0, "col": 1}' and text["result"]["status"] == "ok"
    assert odd["tool"] == "['not', 'a', 'name']" and odd["arguments"] == "[1, 2]"
    assert odd["result"]["status"] == "error" and "unknown tool" in odd["result"]["message"]
    assert done["arguments"] is None and done["result"]["status"] == "ok"
    assert rejected == {
        "tool": None,
        "arguments": "b'\\x00bytes'",
        "result": {"status": "error", "message": "free text", "data": None},
    }
    assert Episode(TASK).trace is None


def test_attribute_kinds_come_from_the_items():
    episode = Episode(TASK)
    assert episode.attributes == {
        "cost": "number",
        "weight": "number",
        "color": "category",
        "shape": "category",
    }
    assert episode.visible == {"V00", "V02", "V10", "V11"}


def test_invalid_calls_add_up_whatever_makes_them_invalid(monkeypatch):
    """Each invalid call counts once more: unknown tools, rejected actions, and a tool that
    raises inside the environment (its message kept to the message limit, not the echo limit)."""
    from gridbench.env.tools import MESSAGE_LIMIT

    episode = Episode(TASK)
    episode.call("no_such_tool")
    episode.call("no_such_tool")
    assert episode.invalid == 2
    episode.reject("x" * (MESSAGE_LIMIT + 50))
    rejected = episode.reject("free text")
    assert episode.invalid == 4 and rejected["message"] == "free text"

    def broken(name, arguments):
        raise RuntimeError("y" * (MESSAGE_LIMIT + 50))

    monkeypatch.setattr(episode, "_call", broken)
    first = episode.call("get_slot_id", CELL)
    episode.call("get_slot_id", CELL)
    assert episode.invalid == 6 and episode.steps == 6
    assert (
        first["message"] == "internal error handled: RuntimeError: " + "y" * 120 + "... (930 more characters)"
    )
    # an argument error is kept to the message limit: longer than an echo (120), here whole
    wrong = Episode(TASK).call("get_slot_id", {"row": "x" * 500, "col": 0})
    assert len(wrong["message"]) > 150 and wrong["message"].endswith("... (382 more characters)")
    long = Episode(TASK).reject("z" * (MESSAGE_LIMIT + 7))
    assert long["message"] == "z" * MESSAGE_LIMIT + "... (7 more characters)"


def test_the_trace_keeps_arguments_and_names_up_to_their_limits():
    """Arguments are kept as sent up to 32 levels, 10,000 values and 1,000,000 characters (one
    more of any is abbreviated); a tool name up to 200 characters."""

    def nested(levels: int) -> dict:
        value: dict = {}
        for _ in range(levels):
            value = {"a": value}
        return value

    cases = {
        "depth": (nested(32), nested(33)),  # the innermost {} is the 33rd level of 32 nestings
        "values": ({str(i): 0 for i in range(4999)}, {str(i): 0 for i in range(5000)}),
        "characters": ("c" * 1_000_000, "c" * 1_000_001),
    }
    for case, (kept, abbreviated) in cases.items():
        episode = Episode(TASK, record=True)
        episode.call("get_slot_id", kept)
        episode.call("get_slot_id", abbreviated)
        assert episode.trace is not None
        assert episode.trace[0]["arguments"] == kept, case
        assert isinstance(episode.trace[1]["arguments"], str) and len(episode.trace[1]["arguments"]) < 1000, (
            case
        )
    episode = Episode(TASK, record=True)
    episode.call("n" * 200)
    episode.call("n" * 201)
    assert episode.trace is not None
    assert episode.trace[0]["tool"] == "n" * 200 and episode.trace[1]["tool"] != "n" * 201


def test_the_grid_state_is_ok_and_counts_empty_cells_in_words():
    episode = Episode(TASK)
    state = episode.call("get_current_grid_state")
    assert state["status"] == "ok" and state["message"] == "2 hidden cells still empty"
    episode.call("set_slot", {**CELL, "id": "A"})
    state = episode.call("get_current_grid_state")
    assert state["status"] == "ok" and state["message"] == "1 hidden cell still empty"
    assert episode.call("done")["message"] == "episode finished with 1 empty hidden cell"
