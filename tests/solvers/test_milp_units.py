"""The MILP cross-check's records on the tiny hand-built task (tests/tiny.py): which proof ran,
what each field says, defaults, and the settings and solver it was given."""

from __future__ import annotations

import dataclasses

import pytest

from gridbench_core.errors import UserError
from gridbench_core.task import GlobalRule, SlotRoles, SlotRule
from solvers.milp import MILP_SOLVERS, MilpModel, Row, crosscheck, crosscheck_answer, solver_version
from solvers.results import FEASIBLE, INFEASIBLE, UNKNOWN, SolverSettings
from tests.tiny import ANSWER, OPEN_TASK, TASK

TRUTH = ANSWER.truth_choice()
DECOYS = {(0, 1): ["A", "D"], (1, 2): ["E", "F"]}  # every locally valid option but the truth


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_one_solve_proves_everything_when_the_decoys_are_every_other_option(solver):
    check = crosscheck(TASK, TRUTH, DECOYS, solver=solver)
    assert check.ok and check.truth_feasible and check.unique and check.decoys_infeasible
    assert check.statuses == {"most_decoys": FEASIBLE} and check.most_decoys_used == 0
    assert (check.solver, check.solver_version, check.counterexample) == (
        solver,
        solver_version(solver),
        None,
    )
    assert "counterexample" not in check.to_dict()


def test_three_solves_when_a_decoy_list_is_incomplete():
    check = crosscheck(TASK, TRUTH, {(0, 1): ["A"], (1, 2): ["E", "F"]})
    assert check.ok and check.statuses == {"truth": FEASIBLE, "other": INFEASIBLE, "most_decoys": FEASIBLE}
    assert (check.solver, check.solver_version) == ("highs", solver_version("highs"))
    assert check.most_decoys_used == 0 and check.counterexample is None
    not_all = crosscheck(TASK, TRUTH, {(0, 1): ["A", "D"]})  # no decoys listed for (1, 2)
    assert not_all.ok and set(not_all.statuses) == {"truth", "other", "most_decoys"}


def test_the_defaults_are_highs_and_the_answer_files_decoys():
    assert crosscheck(TASK, TRUTH, DECOYS).solver == "highs"
    assert crosscheck_answer(TASK, ANSWER).solver == "highs"
    assert crosscheck_answer(TASK, ANSWER).statuses == {"most_decoys": FEASIBLE}
    assert crosscheck_answer(TASK, ANSWER, solver="cbc").solver == "cbc"
    with pytest.raises(UserError, match="MILP solver 'glpk' is unknown"):
        crosscheck(TASK, TRUTH, DECOYS, solver="glpk")


def test_the_settings_given_are_the_ones_used():
    tiny = SolverSettings(time_limit_s=1e-9)
    check = crosscheck_answer(TASK, ANSWER, tiny)
    assert not check.ok and set(check.statuses.values()) == {UNKNOWN}
    assert not MilpModel(TASK, tiny).truth_feasible(TRUTH).status == FEASIBLE


def test_a_second_completion_and_a_usable_decoy_are_reported():
    answer = dataclasses.replace(
        ANSWER,
        truth=(("V00", "D", "V02"), ("V10", "V11", "G")),
        roles=(SlotRoles(0, 1, "D", ("A", "C"), ("B",)), SlotRoles(1, 2, "G", ("E", "F"), ())),
    )
    check = crosscheck_answer(OPEN_TASK, answer)
    assert not check.ok and check.truth_feasible and not check.unique and not check.decoys_infeasible
    assert check.most_decoys_used == 1 and check.statuses["other"] == FEASIBLE
    assert check.counterexample in ({"0,1": "A", "1,2": "G"}, {"0,1": "C", "1,2": "G"})
    assert check.to_dict()["counterexample"] == check.counterexample


def test_a_truth_that_is_not_an_option_is_infeasible_without_a_solve():
    model = MilpModel(TASK)
    result = model.truth_feasible({(0, 1): "B", (1, 2): "G"})  # B breaks cost <= 4
    assert (result.status, result.wall_ms, result.solution) == (INFEASIBLE, 0.0, None)
    assert model.truth_feasible(TRUTH).solution == TRUTH


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_the_solvers_print_nothing(solver, capfd):
    assert crosscheck(TASK, TRUTH, {(0, 1): ["A"]}, solver=solver).ok
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_an_item_without_the_attribute_never_passes_a_slot_rule_on_it():
    """As in the checker: a missing value meets no rule, not even ``not_in``."""
    from gridbench_core.task import SlotRule
    from solvers.checker import locally_valid_candidates

    items = {**TASK.items, "A": {k: v for k, v in TASK.items["A"].items() if k != "color"}}
    for rule in (SlotRule("color", "not_in", ("blue",)), SlotRule("color", "in", ("red",))):
        slots = (dataclasses.replace(TASK.slots[0], constraints=(rule,)), TASK.slots[1])
        task = dataclasses.replace(TASK, items=items, slots=slots)
        assert "A" not in MilpModel(task).options[(0, 1)]
        assert MilpModel(task).options[(0, 1)] == locally_valid_candidates(task, task.slots[0])


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_an_integer_infeasible_model_that_crashes_cbc_without_preprocessing_is_infeasible(
    solver, tmp_path, monkeypatch
):
    """CBC 2.10.3 with "preprocess off" dies (segmentation fault) on this model; the solve is
    repeated with preprocessing, and the verdict is the true one on both solvers. The crash
    leaves none of PuLP's files behind in the temporary folder."""
    import tempfile

    from solvers.milp import Row, _solve_cbc, _solve_highs

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where PuLP writes by default
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    rows = [
        Row("one", ((0, 1), (1, 1), (2, 1)), "==", 1),
        Row("cap", ((0, 1), (1, 2)), "<=", 1),
        Row("floor", ((0, 1), (1, 2)), ">=", 1),
        Row("not_truth", ((0, 1),), "<=", 0),
    ]
    solve = _solve_cbc if solver == "cbc" else _solve_highs
    status, values, _ = solve(3, rows, {}, False, SolverSettings())
    assert (status, values) == (INFEASIBLE, [])
    feasible, values, _ = solve(3, rows[:3], {}, False, SolverSettings())
    assert feasible == FEASIBLE and [round(v) for v in values] == [1, 0, 0]
    assert list(tmp_path.iterdir()) == []


class _Clock:
    """``time`` for solvers.milp whose every reading is ``step`` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def _crashing_cbc(monkeypatch, always: bool) -> list[list[str]]:
    """CBC that crashes (as PuLP reports a segmentation fault) without preprocessing, or always;
    the options of every solve are recorded."""
    import pulp

    calls: list[list[str]] = []
    real = pulp.PULP_CBC_CMD

    class Crashing(real):  # type: ignore[misc, valid-type]
        def actualSolve(self, lp, **kwargs):  # noqa: N802 (PuLP's name)
            calls.append(list(self.options))
            if always or "preprocess off" in self.options:
                raise pulp.PulpSolverError("Pulp: Error while trying to execute cbc")
            return super().actualSolve(lp, **kwargs)

    monkeypatch.setattr(pulp, "PULP_CBC_CMD", Crashing)
    return calls


PICK_ONE = [Row("one", ((0, 1), (1, 1)), "==", 1)]
PICK_THREE = [Row("three", ((0, 1), (1, 1)), "==", 3)]  # two binary columns: infeasible


def test_a_cbc_crash_without_preprocessing_is_solved_again_with_it(monkeypatch):
    from solvers.milp import _solve_cbc

    settings = SolverSettings(time_limit_s=30.0)
    calls = _crashing_cbc(monkeypatch, always=False)
    status, values, objective = _solve_cbc(2, PICK_ONE, {0: 1}, True, settings)
    assert (status, values, objective) == (FEASIBLE, [1.0, 0.0], 1.0)
    assert calls == [["preprocess off"], []]  # the second solve preprocesses
    # an "infeasible" of the second solve is trusted when it ended well inside the time limit
    assert _solve_cbc(2, PICK_THREE, {}, False, settings) == (INFEASIBLE, [], 0.0)


def test_after_a_crash_an_infeasible_near_the_time_limit_or_a_second_crash_is_unknown(monkeypatch):
    import solvers.milp as milp

    settings = SolverSettings(time_limit_s=30.0)
    _crashing_cbc(monkeypatch, always=False)
    monkeypatch.setattr(milp, "time", _Clock(15.0))  # the second solve took half the limit
    assert milp._solve_cbc(2, PICK_THREE, {}, False, settings) == (UNKNOWN, [], 0.0)
    monkeypatch.setattr(milp, "time", _Clock(14.9))
    assert milp._solve_cbc(2, PICK_THREE, {}, False, settings) == (INFEASIBLE, [], 0.0)
    assert (
        milp._solve_cbc(2, PICK_ONE, {1: 1}, True, settings)[0] == FEASIBLE
    )  # a time-out is no proof, a solution is
    calls = _crashing_cbc(monkeypatch, always=True)
    assert milp._solve_cbc(2, PICK_ONE, {}, False, settings) == (UNKNOWN, [], 0.0)
    assert calls == [["preprocess off"], []]


def _every_choice(task):
    """Every choice of one candidate per hidden cell."""
    import itertools

    cells = [(s.row, s.col) for s in task.slots]
    for combo in itertools.product(*(s.candidates for s in task.slots)):
        yield dict(zip(cells, combo, strict=True))


@pytest.mark.parametrize("solver", MILP_SOLVERS)
@pytest.mark.parametrize(
    "rule",
    [
        GlobalRule("heavy_min", "count_min_threshold", "weight", 2, at_least=5),
        GlobalRule("heavy_one", "count_min_threshold", "weight", 1, at_least=8),
        GlobalRule("red_min", "count_min", "color", 3, equals="red"),
        GlobalRule("green_max", "count_max", "color", 1, equals="green"),
        GlobalRule("light", "sum_max", "weight", 15),
    ],
    ids=lambda rule: rule.name,
)
def test_each_rule_kind_makes_exactly_the_checker_s_choices_feasible(solver, rule):
    """Every choice of candidates, fixed as the truth: the MILP says FEASIBLE exactly when the
    reference checker accepts the filled grid (each rule kind's coefficients, thresholds
    included)."""
    from solvers.checker import is_valid_completion

    task = dataclasses.replace(OPEN_TASK, global_constraints=(rule,))
    model = MilpModel(task, solver=solver)
    verdicts = set()
    for choice in _every_choice(task):
        expected = FEASIBLE if is_valid_completion(task, choice) else INFEASIBLE
        assert model.truth_feasible(choice).status == expected, (rule.name, choice)
        verdicts.add(expected)
    assert verdicts == {FEASIBLE, INFEASIBLE}  # the rule decides something here


def test_the_solver_asked_for_is_the_one_that_solves(monkeypatch):
    import solvers.milp as milp

    calls: list[str] = []
    for name in ("_solve_highs", "_solve_cbc"):
        real = getattr(milp, name)

        def spy(*args, real=real, name=name):
            calls.append(name)
            return real(*args)

        monkeypatch.setattr(milp, name, spy)
    for solver in ("cbc", "highs"):
        result = MilpModel(TASK, solver=solver).truth_feasible(TRUTH)
        assert result.status == FEASIBLE
    assert calls == ["_solve_cbc", "_solve_highs"]


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_number_rule_on_a_word_attribute_never_passes(solver):
    """``>=`` / ``<=`` on an attribute holding a word (or nothing) pass no item; never a
    comparison error."""
    for op in (">=", "<="):
        slot = dataclasses.replace(TASK.slots[0], constraints=(SlotRule("color", op, 2),))
        task = dataclasses.replace(TASK, slots=(slot, TASK.slots[1]))
        assert MilpModel(task, solver=solver).truth_feasible(TRUTH).status == INFEASIBLE


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_solve_reports_its_own_wall_time(solver):
    import time

    model = MilpModel(TASK, solver=solver)
    start = time.perf_counter()
    result = model.other_completion(TRUTH)
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    assert result.status == INFEASIBLE and result.wall_ms is not None
    assert elapsed_ms * 1e-3 < result.wall_ms <= elapsed_ms
    feasible = model.truth_feasible(TRUTH)
    assert feasible.status == FEASIBLE and feasible.wall_ms is not None and feasible.wall_ms > 0


def test_highs_refuses_an_option_it_does_not_know_and_so_do_we(monkeypatch):
    """Every option set on HiGHS is checked: a misspelt one (threads, the seed) would be
    ignored by HiGHS with a warning, and the solve would silently use its default."""
    import highspy

    import solvers.milp as milp

    real = highspy.Highs

    class Misspelt(real):  # type: ignore[misc, valid-type]
        def setOptionValue(self, option, value):  # noqa: N802 (HiGHS' name)
            return super().setOptionValue("XX" + option if option == "threads" else option, value)

    monkeypatch.setattr(highspy, "Highs", Misspelt)
    with pytest.raises(RuntimeError, match="HiGHS refused the option threads=1"):
        milp.MilpModel(TASK, solver="highs").truth_feasible(TRUTH)


@pytest.mark.parametrize(
    ("sense", "rhs", "fails"),
    [("<=", -1, True), ("<=", 0, False), ("<=", 3, False), (">=", 1, True), (">=", 0, False)]
    + [(">=", -2, False), ("==", 1, True), ("==", -1, True), ("==", 0, False)],
)
def test_a_row_without_columns_is_decided_by_its_constant(sense, rhs, fails):
    from solvers.milp import Row, _constant_row_fails

    assert _constant_row_fails(Row("r", (), sense, rhs)) is fails
    assert not _constant_row_fails(Row("r", ((0, 1),), sense, rhs))  # a column: the solver decides


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_a_task_whose_hidden_cell_has_no_option_is_infeasible_without_a_solve(solver, monkeypatch):
    from solvers import milp
    from tests.examples import NO_OPTION

    def no_solver(*args, **kwargs):
        raise AssertionError("a solver was called")

    monkeypatch.setattr(milp, "_solve_highs", no_solver)
    monkeypatch.setattr(milp, "_solve_cbc", no_solver)
    model = milp.MilpModel(NO_OPTION, solver=solver)
    for result in (model.most_decoys({}), model.other_completion({(0, 1): "h"})):
        assert result.status == "INFEASIBLE" and result.wall_ms == 0.0


def test_highs_runs_without_primal_heuristics_and_starts_most_decoys_from_the_truth(monkeypatch):
    """What makes the HiGHS cross-check fast, never what proves it: primal heuristics off, and
    the "most decoys" solve started from the truth (kept only when HiGHS finds it feasible)."""
    import highspy

    options, starts = {}, []
    set_option, set_solution = highspy.Highs.setOptionValue, highspy.Highs.setSolution

    def option(self, name, value):
        options[name] = value
        return set_option(self, name, value)

    def solution(self, given):
        starts.append((list(given.col_value), given.value_valid))
        return set_solution(self, given)

    monkeypatch.setattr(highspy.Highs, "setOptionValue", option)
    monkeypatch.setattr(highspy.Highs, "setSolution", solution)
    model = MilpModel(TASK)
    truth_columns = sorted(model.column[(cell, i)] for cell, i in TRUTH.items())
    assert crosscheck(TASK, TRUTH, DECOYS).ok  # the one-solve proof
    assert options["mip_heuristic_run_feasibility_jump"] is False and options["mip_heuristic_effort"] == 0.0
    for name in ("rins", "rens", "root_reduced_cost", "zi_round", "shifting"):
        assert options[f"mip_heuristic_run_{name}"] is False, name
    (values, valid), *more = starts
    assert not more and valid is True
    assert [n for n, v in enumerate(values) if v] == truth_columns and set(values) == {0.0, 1.0}
    starts.clear()
    assert crosscheck(TASK, TRUTH, {(0, 1): ["A"], (1, 2): ["E", "F"]}).ok  # three solves
    assert len(starts) == 1 and [n for n, v in enumerate(starts[0][0]) if v] == truth_columns
    starts.clear()
    assert model.most_decoys(DECOYS).objective == 0 and not starts  # no hint, no start
    outside = {**TRUTH, (0, 1): "B"}  # B breaks its slot rule: no column, no start
    assert model.most_decoys(DECOYS, hint=outside).objective == 0 and not starts
