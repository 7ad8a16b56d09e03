"""Trajectory diagnostics against hand-built transcripts of the tiny toy task (tests/tiny.py):
information sufficiency reached at a known step, wasted calls, an undone wrong move,
violations introduced and repaired, the budgets left and the ideal agent's calls."""

from __future__ import annotations

import pytest

from gridbench.agents.harness import episode_diagnostics
from gridbench.env import Episode
from gridbench_core.budgets import EnvSettings
from pipeline.evaluation.diagnostics import diagnose, ideal_calls, informed_step, violation_track
from pipeline.evaluation.knowledge import Knowledge, Value, read_calls, replay
from solvers.ladder import SEARCH
from tests.tiny import ANSWER, TASK

Q = "query_toy_candidate_from_attribute"
VISIBLE = ["V00", "V02", "V10", "V11"]


def play(moves, settings=None, task=TASK):
    """The trace of ``moves`` ((tool, arguments) pairs) played on a real episode."""
    episode = Episode(task, settings or EnvSettings(), record=True)
    for name, arguments in moves:
        episode.call(name, arguments)
    return episode


def query(row, col, field, operator=">=", value=0):
    return (Q, {"row": row, "col": col, "field": field, "operator": operator, "value": value})


def put(row, col, item):
    return ("set_slot", {"row": row, "col": col, "id": item})


# The weight rule alone decides the task in one round (hidden weight >= 27 - 11 = 16 needs
# C (9) in (0, 1) and G (8) in (1, 2)): the agent knows enough once it has read the visible
# weights and the weights of both cells' candidates.
READ_WEIGHTS = [
    ("get_toy_item_attributes", {"ids": VISIBLE, "field": "weight"}),
    query(0, 1, "weight"),
    query(1, 2, "weight"),
]
SOLVE = [put(0, 1, "C"), put(1, 2, "G"), ("done", {})]


def diagnostics(moves, turns=None, settings=None):
    episode = play(moves, settings)
    return episode_diagnostics(TASK, ANSWER, episode, turns)


def test_information_suffices_at_the_call_that_completes_what_the_rule_needs():
    found = diagnostics(READ_WEIGHTS + SOLVE)
    assert found["depth_rung"] == "one_round"
    assert found["informed_step"] == 3 and found["informed_turn"] == 3
    # without the visible weights the sum cannot be bounded: never informed
    assert diagnostics(READ_WEIGHTS[1:] + SOLVE)["informed_step"] is None
    # read in another order, with other calls between: the step moves with the last read
    later = [
        READ_WEIGHTS[1],
        put(0, 1, "A"),
        READ_WEIGHTS[2],
        ("get_current_grid_state", {}),
        READ_WEIGHTS[0],
    ]
    assert diagnostics(later + SOLVE)["informed_step"] == 5
    # a model's turns: the calls of one reply share its turn
    assert diagnostics(READ_WEIGHTS + SOLVE, turns=[1, 1, 2, 3, 3, 4])["informed_turn"] == 2


def test_bounds_read_off_a_condition_suffice_where_they_decide():
    """weight >= 8 in (0, 1) returns C (9) alone: A, B and D have weight at most 7, which the
    weight floor (the hidden cells need 16, (1, 2) gives at most 8) rules out without their
    exact weights. Informed at the third call, as with every weight read."""
    moves = [READ_WEIGHTS[0], query(0, 1, "weight", ">=", 8), READ_WEIGHTS[2]]
    assert diagnostics(moves + SOLVE)["informed_step"] == 3
    # weight >= 5 leaves A (4), B (1) and D (2) at most 4: still ruled out (4 + 8 < 16)
    moves = [READ_WEIGHTS[0], query(0, 1, "weight", ">=", 5), READ_WEIGHTS[2]]
    assert diagnostics(moves + SOLVE)["informed_step"] == 3
    # a cap tells nothing to a floor: weight <= 8 leaves C (9) only bounded below
    moves = [READ_WEIGHTS[0], query(0, 1, "weight", "<=", 8), READ_WEIGHTS[2]]
    assert diagnostics(moves + SOLVE)["informed_step"] is None


def test_the_most_favourable_value_of_an_option_for_each_rule():
    from gridbench_core.task import GlobalRule
    from pipeline.evaluation.diagnostics import OTHER, favourable

    at_least_3 = Value(low=3)
    assert favourable(GlobalRule("c", "sum_max", "cost", 9), at_least_3, "u") == 3
    assert favourable(GlobalRule("w", "sum_min", "cost", 9), at_least_3, "u") is None
    assert favourable(GlobalRule("w", "sum_min", "cost", 9), Value(high=7), "u") == 7
    assert favourable(GlobalRule("r", "repeat_max", "color", 1), None, "u") is None
    assert (
        favourable(GlobalRule("r", "repeat_max", "color", 1), Value(allowed=frozenset({"red"})), "u") == "red"
    )
    assert favourable(GlobalRule("b", "count_max", "color", 1, equals="blue"), None, "u") == OTHER
    not_blue = Value(excluded={"blue"})
    assert favourable(GlobalRule("b", "count_min", "color", 1, equals="blue"), not_blue, "u") == OTHER
    assert favourable(GlobalRule("b", "count_min", "color", 1, equals="blue"), None, "u") == "blue"
    threshold = GlobalRule("t", "count_min_threshold", "cost", 2, at_least=5)
    assert favourable(threshold, Value(high=4), "u") == 4 and favourable(threshold, None, "u") == 5
    assert favourable(GlobalRule("c", "sum_max", "cost", 9), Value(low=2, high=2), "u") == 2


def test_a_narrower_query_than_the_slot_rule_leaves_unseen_candidates_open():
    """cost <= 2 in (0, 1) leaves the candidates not returned with cost > 2, which the slot
    rule (cost <= 4) does not rule out: their weights are unknown, so the cell stays open."""
    narrow = [READ_WEIGHTS[0], query(0, 1, "cost", "<=", 2), query(1, 2, "weight")]
    assert diagnostics(narrow + SOLVE)["informed_step"] is None
    # the slot rule's own condition rules out B (cost 5) and reads the others' costs, which
    # still says nothing of their weights: open until the weights are read
    exact = narrow + [query(0, 1, "cost", "<=", 4), query(0, 1, "weight", ">=", 1)]
    assert diagnostics(exact + SOLVE)["informed_step"] == 5


def test_wasted_calls_are_repeated_or_implied_queries_and_checks_with_a_known_answer():
    moves = [
        query(0, 1, "cost", "<=", 4),  # the slot rule: A C D returned, B known to break it
        query(0, 1, "cost", "<=", 4),  # the same again: wasted
        query(0, 1, "cost", "<=", 3),  # implied by the costs already read: wasted
        query(0, 1, "weight"),  # new
        put(0, 1, "A"),
        ("check_toy_slot_constraints", {"row": 0, "col": 1}),  # cost 3 <= 4 was known: wasted
        put(1, 2, "G"),
        ("check_toy_slot_constraints", {"row": 1, "col": 2}),  # G's weight and cost unknown: not
        ("check_toy_slot_constraints", {"row": 1, "col": 2}),  # its answer was given: wasted
        ("check_toy_global_constraints", {}),
        ("check_toy_global_constraints", {}),  # the same grid: wasted
        put(0, 1, "C"),
        ("check_toy_global_constraints", {}),  # another grid: not wasted
    ]
    found = diagnostics(moves)
    assert (found["wasted_queries"], found["wasted_checks"], found["wasted_calls"]) == (2, 3, 5)


def test_a_failed_or_invalid_call_is_neither_a_fact_nor_waste():
    moves = [
        query(0, 1, "cost", "<=", 4),
        (Q, {"row": 0, "col": 1, "field": "nope", "operator": "<=", "value": 4}),  # invalid
        query(0, 1, "cost", "<=", 4),
    ]
    found = diagnose(TASK, ANSWER, read_calls(play(moves).trace, "toy"))
    assert found["wasted_queries"] == 1
    failing = play(moves, EnvSettings(failure_rate=0.99))
    assert all(entry["result"]["status"] == "failed" for entry in failing.trace[::2])
    assert diagnose(TASK, ANSWER, read_calls(failing.trace, "toy"))["wasted_queries"] == 0


def test_the_first_wrong_move_and_whether_it_was_undone():
    undone = diagnostics([put(0, 1, "A"), put(1, 2, "G"), put(0, 1, "C"), ("done", {})])
    assert (undone["wrong_sets"], undone["first_wrong_step"], undone["first_wrong_undone"]) == (1, 1, True)
    kept = diagnostics([put(0, 1, "C"), put(1, 2, "F"), put(0, 1, "D"), ("done", {})])
    assert (kept["wrong_sets"], kept["first_wrong_step"], kept["first_wrong_undone"]) == (2, 2, False)
    right = diagnostics(SOLVE)
    assert (right["wrong_sets"], right["first_wrong_step"], right["first_wrong_undone"]) == (0, None, None)
    cleared = diagnostics([put(1, 2, "E"), put(1, 2, None)])
    assert cleared["first_wrong_undone"] is True


def test_violations_introduced_and_repaired_over_time():
    moves = [put(0, 1, "B"), put(1, 2, "E"), put(0, 1, "C"), put(1, 2, "G"), ("done", {})]
    track = violation_track(TASK, read_calls(play(moves).trace, "toy"))
    assert track == [
        (1, ["blue_max", "slot (0, 1)", "total_cost_max"]),  # B: blue, cost 5 > 4, 10 + 5 > 14
        (2, ["blue_max", "slot (0, 1)", "total_cost_max", "total_weight_min"]),  # complete: 1+6 < 16
        (3, ["blue_max", "total_cost_max", "total_weight_min"]),  # E blue, 10+3+7 > 14, 9+6 < 16
        (4, []),
    ]
    found = diagnostics(moves)
    assert (found["violations_introduced"], found["violations_repaired"], found["violations_at_end"]) == (
        4,
        4,
        0,
    )
    left = diagnostics([put(0, 1, "A"), put(1, 2, "E")])
    assert left["violations_at_end"] == 3 and left["violations_repaired"] == 0


def test_budgets_left_at_the_end_and_the_ideal_agents_calls():
    paper = EnvSettings(query_budget="paper", check_budget="paper")  # queries 1+2 and 2+2, checks 2
    found = diagnostics(READ_WEIGHTS + [("check_toy_global_constraints", {})] + SOLVE, settings=paper)
    assert (found["queries_left"], found["checks_left"]) == (3 + 4 - 2, 2 - 1)
    unlimited = diagnostics(READ_WEIGHTS + SOLVE)
    assert unlimited["queries_left"] is None and unlimited["checks_left"] is None
    # per hidden cell the attributes its rules read (cost, weight, color: 3 + 3), the visible
    # items' (3), one set_slot per hidden cell (2) and done
    assert ideal_calls(TASK) == 12 == found["ideal_calls"]


def test_a_task_of_depth_search_is_decided_by_a_proof_of_one_completion():
    """Eight cells whose two sums pin the truth: no rung below search decides it. Once every
    cell's cost is read (the last one at call 15) the cost sum alone leaves one completion,
    which no propagation shows and CP-SAT proves."""
    from pipeline.evaluation import diagnostics as module
    from tests.hard import hard_task

    task, answer = hard_task(8, 1)
    moves = [query(0, c, field) for c in range(8) for field in ("cost", "weight")]
    calls = read_calls(play(moves, task=task).trace, "toy")
    assert informed_step(task, answer, calls, SEARCH) == 15
    assert informed_step(task, answer, calls[:14], SEARCH) is None
    view = module.view_task(task, replay(task, calls[:15]))
    costs = {rule.name for rule in task.global_constraints if rule.attribute == "cost"}
    assert view is not None and {rule.name.split("#")[0] for rule in view.global_constraints} == costs
    assert not module.decides(view, module.PROBING, answer.truth_choice())  # probing alone cannot


@pytest.mark.parametrize(
    ("facts", "operator", "value", "expected"),
    [
        ([("<=", 400, False)], "<=", 400, False),  # not returned by the slot rule's condition
        ([("<=", 300, False)], "<=", 400, None),  # a narrower condition says nothing of <= 400
        ([("<=", 300, False)], ">", 300, True),
        ([("=", 7, False), (">=", 7, True), ("<=", 8, True)], "=", 8, True),  # 7 excluded
        ([("in", ["red", "blue"], False)], "=", "red", False),
        ([("not_in", ["red"], False)], "=", "red", True),
        ([], "not_in", [], True),
    ],
)
def test_what_a_value_is_known_to_be(facts, operator, value, expected):
    known = Value()
    for fact in facts:
        known.learn(*fact)
    assert known.status(operator, value) is expected


def test_diagnostics_read_any_trace_without_raising():
    junk = [None, 5, {"tool": 3}, {"tool": Q, "arguments": "{not json", "result": {"status": "ok"}}]
    junk += [
        {"tool": Q, "arguments": {"row": "x", "col": [], "field": 1}, "result": {"status": "ok", "data": 7}}
    ]
    junk += [{"tool": "set_slot", "arguments": {"row": 9, "col": 9, "id": "A"}, "result": {"status": "ok"}}]
    calls = read_calls(junk, "toy")
    found = diagnose(TASK, ANSWER, calls)
    assert found["informed_step"] is None and found["wrong_sets"] == 0 and found["wasted_calls"] == 0
    assert not Knowledge(TASK).query_implied(calls[3])


def test_the_agent_loop_records_the_model_turn_of_every_environment_call():
    from gridbench.agents.llm.loop import AgentLoop, LoopSettings, Reply
    from gridbench.agents.llm.toolcalls import ToolCall

    episode = Episode(TASK, record=True)
    loop = AgentLoop(episode, LoopSettings(max_turns=10, max_reminders=2), [])
    first, second = READ_WEIGHTS[1][1], READ_WEIGHTS[2][1]
    calls = [ToolCall("a", Q, first), ToolCall("b", "nope", {}), ToolCall("c", Q, second)]
    loop.take(Reply(tool_calls=calls))
    loop.take(Reply(content="thinking"))  # no call: a reminder, no environment call
    loop.take(Reply(tool_calls=[ToolCall("d", "done", {})]))
    assert loop.outcome.call_turns == [1, 1, 1, 3] and len(episode.trace) == 4


def test_the_violations_kept_up_to_date_are_the_checkers_at_every_change():
    """Random set_slot sequences on hand-built toy tasks (every rule kind and scope): the
    tracker's violations equal the checker's statuses of the whole grid after each change."""
    import random

    from pipeline.evaluation.diagnostics import Violations
    from solvers.checker import check_global, passes_slot
    from tests import examples, tiny

    tasks = [tiny.TASK, tiny.OPEN_TASK, examples.ROW_REPEAT, examples.VISIBLE_BREAKS, examples.BOUNDARY]
    tasks += [examples.THRESHOLD_ZERO, examples.LOOSENING_CAP]
    rng = random.Random(7)
    for task in tasks:
        tracker = Violations(task)
        for _ in range(60):
            slot = rng.choice(task.slots)
            item = rng.choice([*slot.candidates, None])
            got = tracker.set((slot.row, slot.col), item)
            grid = tracker.grid
            expected = {name for name, status in check_global(task, grid).items() if status == "violated"}
            expected |= {
                f"slot ({s.row}, {s.col})"
                for s in task.slots
                if grid[s.row][s.col] is not None and not passes_slot(s, task.items[grid[s.row][s.col]])
            }
            assert got == sorted(expected), (task.task_id, grid)
