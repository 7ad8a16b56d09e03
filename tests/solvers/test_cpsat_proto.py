"""``solvers.cpsat`` writes CP-SAT's proto itself (without ``cp_model``, which loads pandas):
for every kind of task -- random small ones, the hand-built edge cases, generated tasks of
every domain and a caged 10x10, item ids that need escaping, no rule, a cell without an
option -- its proto is the one ``cp_model.CpModel`` builds (tests/solvers/cp_model_reference.py),
before and after the later additions (an "at least one of" switch, the one-relaxed switch, an
excluded completion, a moved bound), and the answers of a solve are those of ``cp_model``'s
``CpSolver`` on the reference model."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from hypothesis import example, given, settings
from ortools.sat.python import cp_model

from gridbench_core.task import Task
from solvers.cpsat import CpSatModel
from solvers.results import SolverSettings
from tests.brute import completions
from tests.examples import BOUNDARY, CASED, LOOSENING_CAP, LOWER_LOOSENING, NO_OPTION, ROW_REPEAT
from tests.solvers.cp_model_reference import ReferenceModel
from tests.strategies import small_tasks
from tests.tiny import ANSWER, TASK

Cell = tuple[int, int]


def _renamed(task: Task, rename) -> Task:  # type: ignore[no-untyped-def]
    """``task`` with every item id passed through ``rename``."""
    items = {rename(i): {**item, "id": rename(i)} for i, item in task.items.items()}
    grid = tuple(tuple(None if i is None else rename(i) for i in row) for row in task.grid)
    slots = tuple(dataclasses.replace(s, candidates=tuple(map(rename, s.candidates))) for s in task.slots)
    return dataclasses.replace(task, items=items, grid=grid, slots=slots)


def _truth(task: Task) -> dict[Cell, str] | None:
    found = completions(task)
    return found[0] if found else None


def _same_models(task: Task, truth: dict[Cell, str] | None) -> None:
    ours, reference = CpSatModel(task, truth=truth), ReferenceModel(task, truth)
    assert str(ours.proto) == str(reference.model.proto)
    # the later additions, in the same order on both
    options = [((s.row, s.col), c) for s in task.slots for c in s.candidates]
    literals = [lit for cell, item in options if (lit := reference.choice[cell].get(item)) is not None]
    if literals:
        ours.some_feasible(options)
        reference.some_of(literals)
    if truth is not None and all(truth[c] in reference.choice[c] for c in reference.choice):
        ours.excluding(truth)
        reference.excluding(truth)
    ours.least_loosening_to_ambiguity()
    reference.one_relaxed()
    for rule in task.global_constraints[:2]:
        ours.set_bound(rule.name, rule.bound + 1)
        reference.set_bound(rule.name, rule.bound + 1)
    ours.proto.assumptions.clear()
    assert str(ours.proto) == str(reference.model.proto)
    # the same proto answers the same: our solve against cp_model's CpSolver on the reference
    for rule in task.global_constraints[:2]:
        ours.set_bound(rule.name, rule.bound)
        reference.set_bound(rule.name, rule.bound)
    settings_ = SolverSettings()
    questions = [([], None)]
    if truth is not None:
        questions.append(([ours.forbid_truth], None))
    for assumptions, relaxed in questions:
        result = ours.solve(assumptions)
        fixed = [reference.relax[name].Not() for name in reference.relax if name != relaxed]
        reference.model.clear_assumptions()
        reference.model.add_assumptions([reference.forbid_truth] * bool(assumptions) + fixed)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = settings_.workers
        solver.parameters.random_seed = settings_.seed
        solver.parameters.cp_model_presolve = settings_.presolve
        solver.parameters.linearization_level = settings_.linearization
        status = solver.solve(reference.model)
        assert (
            result.status
            == {
                cp_model.OPTIMAL: "FEASIBLE",
                cp_model.FEASIBLE: "FEASIBLE",
                cp_model.INFEASIBLE: "INFEASIBLE",
            }[status]
        )
        if result.solution is not None:
            expected = {
                cell: next(i for i, lit in options.items() if solver.boolean_value(lit))
                for cell, options in reference.choice.items()
            }
            assert result.solution == expected
            assert result.objective == round(solver.objective_value)


@example(task=ROW_REPEAT)
@example(task=LOOSENING_CAP)
@example(task=BOUNDARY)
@example(task=LOWER_LOOSENING)
@example(task=CASED)
@example(task=NO_OPTION)
@settings(max_examples=40)
@given(task=small_tasks())
def test_the_proto_is_the_one_cp_model_builds(task):
    _same_models(task, _truth(task))


@pytest.mark.parametrize(
    "rename",
    [
        lambda i: f'q"{i}\\',  # a quote and a backslash
        lambda i: f"é{i}\n\t\x00",  # non-ASCII, control characters and a NUL
        lambda i: f"{i} }} variables {{ domain: [0, 0] }}",  # text-format syntax inside a name
    ],
)
def test_item_ids_that_need_escaping_give_the_same_proto(rename):
    task = _renamed(TASK, rename)
    _same_models(task, {cell: rename(item) for cell, item in ANSWER.truth_choice().items()})


def test_a_task_without_rules_gives_the_same_proto():
    _same_models(dataclasses.replace(TASK, global_constraints=()), ANSWER.truth_choice())


@functools.cache
def _generated() -> list[tuple[Task, dict[Cell, str]]]:
    from domains import PAPER_DOMAINS
    from gridbench_core.task_io import answer_from_dict, task_from_dict
    from pipeline.generation.dataset import create_dataset
    from pipeline.generation.keys import GenerationSettings

    out = []
    jobs = [(domain, "5x7", range(12, 22), range(15, 26)) for domain in PAPER_DOMAINS]
    jobs.append(("course", "10x10", range(40, 61), range(60, 61)))
    for domain, grid, hidden, budgets in jobs:
        dataset = create_dataset(
            domains=[domain],
            size=1,
            seed=11,
            grid=grid,
            hidden_slots=hidden,
            decoy_budgets=budgets,
            settings=GenerationSettings(crosscheck=False),
        )
        item = dataset[0]
        out.append((task_from_dict(item.task), answer_from_dict(item.answer).truth_choice()))
    return out


def test_generated_tasks_of_every_domain_and_a_caged_grid_give_the_same_proto():
    tasks = _generated()
    assert len({task.domain for task, _ in tasks}) == 6
    assert any(rule.scope == "cells" for task, _ in tasks for rule in task.global_constraints)
    for task, truth in tasks:
        _same_models(task, truth)


def _solve_parameters(monkeypatch, read):  # type: ignore[no-untyped-def]
    """A list that receives ``read(parameters)`` of every CP-SAT solve from now on."""
    import types

    import solvers.cpsat as cpsat

    real = cpsat._helper()
    seen: list = []

    class Wrapper(real.SolveWrapper):  # type: ignore[misc, name-defined]
        def set_parameters(self, parameters):
            seen.append(read(parameters))
            return super().set_parameters(parameters)

    monkeypatch.setattr(
        cpsat, "_helper", lambda: types.SimpleNamespace(**{**vars(real), "SolveWrapper": Wrapper})
    )
    return seen


def test_each_solve_gets_the_settings_seed_workers_and_limits(monkeypatch):
    """The certificate records the solver's seed and workers: they are the parameters the
    solve ran with (CP-SAT's, and HiGHS's for the cross-check)."""

    import highspy

    import solvers.cpsat as cpsat
    import solvers.milp as milp
    from pipeline.generation import GenerationSettings, TaskKey, generate_task
    from solvers.results import SolverSettings

    seen = _solve_parameters(monkeypatch, lambda p: (p.random_seed, p.num_workers, p.max_time_in_seconds))
    made = generate_task(TaskKey("toy", 3, 3, 3, 4, 3, 0, 1), GenerationSettings())
    settings = SolverSettings(seed=7, workers=1, time_limit_s=9.0)
    seen.clear()
    assert cpsat.CpSatModel(made.task, settings).solve([]).status == "FEASIBLE"
    assert seen == [(7, 1, 9.0)]

    options: list = []
    original = highspy.Highs.setOptionValue

    def spy(self, option, value):
        options.append((option, value))
        return original(self, option, value)

    monkeypatch.setattr(highspy.Highs, "setOptionValue", spy)
    assert milp.crosscheck_answer(made.task, made.answer, settings, "highs").ok
    assert ("random_seed", 7) in options and ("threads", 1) in options
    # no primal heuristic: never part of a proof, and half of what a branching solve cost
    assert ("mip_heuristic_effort", 0.0) in options and ("mip_heuristic_run_rins", False) in options


def test_the_certificate_s_proofs_skip_probing_and_the_solves_whose_solution_is_used_keep_it(monkeypatch):
    """Probing changes which solution a search finds, never a status: the certificate's proofs
    run without it (``PROOF_PROBING``), repair's counterexamples and the measures'
    optimisation with CP-SAT's default, so what a task is made of does not depend on it."""

    import solvers.cpsat as cpsat
    from pipeline.generation import GenerationSettings, TaskKey, generate_task
    from pipeline.generation.certify import certify

    default = cpsat._helper().SatParameters().cp_model_probing_level
    assert default != cpsat.PROOF_PROBING
    seen = _solve_parameters(monkeypatch, lambda p: p.cp_model_probing_level)
    key = TaskKey("course", 4, 4, 6, 6, 4, 0, 3)
    made = generate_task(key, GenerationSettings(crosscheck=False))
    assert seen.count(cpsat.PROOF_PROBING) == 3  # truth, uniqueness, every decoy at once
    assert seen.count(default) == len(seen) - 3 >= 2  # repair's last solve, the distance
    seen.clear()
    certificate = certify(made.task, made.answer, SolverSettings())
    assert certificate.ok and seen == [cpsat.PROOF_PROBING] * 3


def test_a_failed_uniqueness_proof_names_the_second_completion_the_default_search_finds():
    """Without probing CP-SAT finds another second completion of this task (found by an
    outside audit); the certificate's failure, which import and verify record, names the one
    CP-SAT's default settings find, as before the proofs ran without it."""
    from gridbench_core.task import Answer, GlobalRule, Slot, SlotRoles, SlotRule
    from pipeline.generation.certify import certify

    def item(item_id, cost, weight, color):  # type: ignore[no-untyped-def]
        return {"id": item_id, "name": f"item {item_id}", "cost": cost, "weight": weight, "color": color}

    records = [
        item("h000", 4, 4, "blue"),
        item("h001", 4, 0, "green"),
        item("h002", 4, 1, "green"),
        item("h100", 4, 1, "blue"),
        item("h101", 3, 4, "red"),
        item("h102", 1, 2, "red"),
    ]
    task = Task(
        "prop",
        "toy",
        2,
        1,
        0,
        ((None,), (None,)),
        {record["id"]: record for record in records},
        (
            Slot(
                0,
                0,
                ("h000", "h001", "h002"),
                (SlotRule("weight", "<=", 2), SlotRule("color", "in", ("green", "red"))),
            ),
            Slot(1, 0, ("h100", "h101", "h102"), ()),
        ),
        (
            GlobalRule("r0", "count_max", "color", 2, scope="col", equals="green"),
            GlobalRule("r1", "sum_min", "cost", 7, scope="col"),
        ),
    )
    answer = Answer(
        "prop", (("h001",), ("h100",)), (SlotRoles(0, 0, "h001", (), ()), SlotRoles(1, 0, "h100", (), ()))
    )
    truth = answer.truth_choice()
    probed = CpSatModel(task, SolverSettings(), truth).other_completion(proof=True).solution
    default = CpSatModel(task, SolverSettings(), truth).other_completion().solution
    assert probed != default  # the two searches differ here: the case this test is about
    certificate = certify(task, answer, SolverSettings())
    assert not certificate.ok and certificate.uniqueness == "FEASIBLE"
    cells = ", ".join(f"({r},{c})={i}" for (r, c), i in sorted(default.items()))
    assert certificate.failures == (f"a second solution exists: {cells}",)
