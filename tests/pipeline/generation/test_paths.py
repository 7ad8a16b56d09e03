"""Generation paths the contract tests do not reach: allocation policies, the whole-task
re-draw, solver time-outs (never a proof), and the multirun entry point with cell reuse."""

from __future__ import annotations

import pytest

from gridbench_core.errors import SolverTimeout
from pipeline.generation import GenerationError, GenerationSettings, TaskKey, decoy_cell_count, generate_task
from solvers.cpsat import CpSatModel
from solvers.results import UNKNOWN, SolveResult
from tests.helpers_release import compose_config, run_module

KEY = TaskKey("course", 5, 7, 11, 15, 25, seed=5)


@pytest.mark.parametrize("allocation", ["paper", "spread", "concentrated"])
def test_every_allocation_places_the_budget_on_the_promised_cells(allocation):
    settings = GenerationSettings(allocation=allocation)
    made = generate_task(KEY, settings)
    cells = [role for role in made.answer.roles if role.decoys]
    assert len(cells) == decoy_cell_count(KEY, settings)
    assert sum(len(role.decoys) for role in cells) == KEY.decoy_budget
    assert made.answer.certificate.ok


def test_a_draft_that_cannot_be_repaired_is_redrawn_whole(monkeypatch):
    import pipeline.generation.build as build
    from pipeline.generation.repair import RepairFailed

    real, calls = build.make_unique, []

    def failing_first(draft, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RepairFailed("forced for the test")
        return real(draft, *args, **kwargs)

    monkeypatch.setattr(build, "make_unique", failing_first)
    made = build.generate_task(KEY)
    assert made.answer.certificate.attempt == 1 and made.answer.certificate.ok


def test_a_solver_time_out_redraws_and_in_the_end_is_an_error_never_a_proof(monkeypatch):
    monkeypatch.setattr(CpSatModel, "solve", lambda self, *a, **k: SolveResult(UNKNOWN, 1.0))
    with pytest.raises(GenerationError, match="SolverTimeout") as error:
        generate_task(KEY, GenerationSettings(max_attempts=2))
    assert "solver.time_limit_s" in str(error.value)


def test_a_time_out_in_the_measures_is_a_solver_time_out(monkeypatch):
    from pipeline.generation.measures import distance_to_ambiguity

    made = generate_task(TaskKey("toy", 3, 3, 4, 4, 5, seed=1))
    monkeypatch.setattr(CpSatModel, "solve", lambda self, *a, **k: SolveResult(UNKNOWN, 1.0))
    with pytest.raises(SolverTimeout):
        distance_to_ambiguity(made.task, made.answer, None)


def test_multirun_cells_are_stored_and_reused_by_the_release(tmp_path, capsys):
    from gridbench.commands.release import build

    cells = tmp_path / "cells"
    done = run_module(
        "gridbench.commands.generate",
        "-m",
        "domain=toy",
        "grid=5x5",
        "task.hidden_slots=2,3",
        "task.decoy_budget=0,2",
        f"release.cache_root={cells}",
        f"hydra.sweep.dir={tmp_path}/sweep",
    )
    assert done.returncode == 0, done.stderr
    assert len(list(cells.rglob("*.json"))) == 4
    cfg = compose_config(
        [
            "release.domains=[toy]",
            "grid=5x5",
            "grid.hidden_slots=[2,3]",
            "grid.decoy_budgets=[0,2]",
            f"release.cache_root={cells}",
            f"release.output_root={tmp_path}/out",
            "release.workers=1",
        ]
    )
    capsys.readouterr()
    assert build(cfg) == 0
    assert "4 tasks (4 reused" in capsys.readouterr().out
