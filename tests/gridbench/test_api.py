"""The public face: ``import gridbench`` is cheap, loads a release, scores a grid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gridbench
from tests import ROOT
from tests.helpers_release import build_small


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return build_small(tmp_path_factory.mktemp("api"), "api")


def test_importing_gridbench_imports_no_solver():
    code = "import sys, gridbench; print('ortools' in sys.modules or 'pulp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


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
    }
    wrong = [list(row) for row in truth]
    role = next(r for r in record.answer["roles"] if r["decoys"])
    wrong[role["row"]][role["col"]] = role["decoys"][0]
    scored = gridbench.score(record.task, wrong, record.answer)
    assert not scored["success"] and scored["wrong_cells"] == [[role["row"], role["col"]]]
    assert gridbench.score(record.task, wrong) == scored  # the truth found by solving
    assert gridbench.score(record.task, [[None]])["success"] is False  # a wrong shape scores 0


def test_writing_a_release_imports_no_solver():
    code = "import sys, pipeline.storage.write; print('ortools' in sys.modules or 'pulp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
