"""The public face: ``import gridbench`` is cheap, loads a release, scores a grid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gridbench
from tests import ROOT


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def test_importing_gridbench_runs_no_solver_or_table_library():
    """The names are loaded at first use (see the next test), and the modules behind them load OR-Tools, PuLP,
    NumPy, polars and Arrow at first use (gridbench_core.lazy), so ``import gridbench`` stays quick."""
    heavy = ("ortools.sat.python.cp_model_helper", "pulp.apis", "pandas", "polars", "pyarrow")
    heavy += ("highspy", "sklearn")
    code = (
        f"import sys, gridbench; print(sorted(m for m in sys.modules if m.startswith({heavy!r}) "
        "or type(sys.modules[m]).__name__ == 'module' and m in ('numpy', 'pulp')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", (out.stdout, out.stderr)


def test_import_gridbench_loads_no_module_behind_its_names_until_one_is_used():
    """The public names are loaded at first use (``gridbench.__getattr__``): ``import gridbench``
    and the console script's ``--help`` load none of the modules behind them (a command pays only
    for what it uses), and the first use of a name loads its module and gives its object."""
    code = (
        "import sys, importlib, gridbench, gridbench.commands.main as m\n"
        "m.usage()\n"
        "def mine(): return sorted(n for n in sys.modules if n.split('.')[0] in "
        "('pipeline', 'solvers', 'domains') or n.startswith(('gridbench.', 'gridbench_core.'))"
        " and n not in ('gridbench.commands', 'gridbench.commands.main'))\n"
        "print(mine())\n"
        "for name in gridbench.__all__:\n"
        "    value = getattr(gridbench, name)\n"
        "    source = gridbench._SOURCES.get(name)\n"
        "    assert source is None or getattr(importlib.import_module(source), name) is value, name\n"
        "assert set(gridbench.__all__) <= set(dir(gridbench)) and 'pipeline.generation' in sys.modules\n"
        "print(gridbench.env.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "gridbench.env"], out.stdout
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        gridbench.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        gridbench._private  # noqa: B018


def test_load_release_indexes_filters_and_plays(release):
    loaded = gridbench.load_release(release)
    assert len(loaded) == 8 and len(list(loaded)) == 8
    course = loaded.filter(domains=["course"], decoy_budgets=[3])
    assert {r.domain for r in course} == {"course"} and {r.decoy_budget for r in course} == {3}
    record = course[0]
    assert loaded[record.task_id].task == record.task and record.answer["task_id"] == record.task_id
    episode = record.episode(gridbench.EnvSettings(failure_rate=0.0), seed=1)
    assert episode.call("get_global_check_budget")["status"] == "ok"
    with pytest.raises(KeyError):
        loaded["no-such-task"]


def test_score_agrees_with_the_answer_and_solves_when_there_is_none(release):
    record = gridbench.load_release(release).filter(decoy_budgets=[3])[0]
    truth = record.answer["truth"]
    assert gridbench.score(record.task, truth) == {
        "success": True,
        "fraction_correct": 1.0,
        "wrong_cells": [],
        "fixed_cells_changed": [],
    }
    wrong = [list(row) for row in truth]
    role = next(r for r in record.answer["roles"] if r["decoys"])
    wrong[role["row"]][role["col"]] = role["decoys"][0]
    scored = gridbench.score(record.task, wrong, record.answer)
    assert not scored["success"] and scored["wrong_cells"] == [[role["row"], role["col"]]]
    assert gridbench.score(record.task, wrong) == scored  # the truth found by solving
    assert gridbench.score(record.task, [[None]])["success"] is False  # a wrong shape scores 0


class AlwaysEqual(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def test_hostile_grids_never_score_a_success(release):
    loaded = gridbench.load_release(release)
    record = loaded.filter(decoy_budgets=[3])[0]
    task, answer, truth = record.task, record.answer, record.answer["truth"]
    fixed = next((r, c) for r, row in enumerate(task["grid"]) for c, v in enumerate(row) if v is not None)
    junk = [list(row) for row in truth]
    junk[fixed[0]][fixed[1]] = "JUNK"
    hostile = {
        "extra column": [list(row) + ["x"] for row in truth],
        "extra row": [list(row) for row in truth] + [list(truth[0])],
        "a fixed cell changed": junk,
        "lying strings": [[AlwaysEqual("?") for _ in row] for row in truth],
        "objects": [[object() for _ in row] for row in truth],
        "a string": "".join(str(v) for row in truth for v in row),
        "None": None,
        "rows of strings": ["".join(map(str, row)) for row in truth],
    }
    for name, grid in hostile.items():
        scored = gridbench.score(task, grid, answer)
        assert scored["success"] is False, name
    assert gridbench.score(task, junk, answer)["fixed_cells_changed"] == [list(fixed)]
    other = loaded.filter(domains=["toy"])[0]
    with pytest.raises(gridbench.UserError, match="the answer is for task"):
        gridbench.score(task, truth, other.answer)
    for bad_task in (None, "x", 5):
        with pytest.raises(gridbench.UserError):
            gridbench.score(bad_task, truth, answer)
    with pytest.raises(gridbench.UserError):
        gridbench.score(task, truth, "x")


def test_records_are_copies_and_filters_take_values_or_iterables(release):
    loaded = gridbench.load_release(release)
    record = loaded[0]
    record.task["instruction"] = "changed"
    record.task["grid"][0][0] = "X"
    assert loaded[record.task_id].task["instruction"] != "changed"
    assert len(loaded.filter(domains="course")) == len(loaded.filter(domains=(d for d in ["course"]))) == 4
    assert len(loaded.filter(hidden_slots=2)) == len(loaded.filter(hidden_slots=[2]))
    for bad in ({"hidden_slots": "2"}, {"domains": 5}, {"decoy_budgets": [True]}):
        with pytest.raises(gridbench.UserError):
            loaded.filter(**bad)
    for path in (None, 5):
        with pytest.raises(gridbench.UserError):
            gridbench.load_release(path)
    with pytest.raises(gridbench.UserError):
        record.episode("x")


def test_writing_a_release_imports_no_solver():
    code = (
        "import sys, pipeline.storage.write; "
        "print('ortools.sat.python.cp_model_helper' in sys.modules or 'pulp.apis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
