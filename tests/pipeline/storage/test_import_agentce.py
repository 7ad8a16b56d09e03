"""Import of the reference implementation's published files (the six anchors)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline.storage.agentce import convert, read_file
from pipeline.storage.verify import verify_release
from solvers.results import SolverSettings
from solvers.task import TaskFormatError
from solvers.task_io import task_from_dict
from tests import ROOT
from tests.helpers_release import compose_config

ANCHORS = ROOT.parent / "shared" / "anchors" / "agentce_5x5"
FILES = sorted(ANCHORS.glob("*.json"))
pytestmark = pytest.mark.skipif(not FILES, reason="../shared/anchors is not beside the checkout")


def test_every_anchor_instance_converts():
    assert len(FILES) == 6
    for path in FILES:
        data = read_file(path)
        assert len(data["instances"]) == 35
        for index, instance in enumerate(data["instances"]):
            _, task, answer = convert(data["domain"], instance, index, path.name)
            assert task_from_dict(json.loads(json.dumps(task.to_dict()))).to_dict() == task.to_dict()
            assert task.hidden_slots == instance["meta"]["hidden_slots"]
            assert sum(len(r.decoys) for r in answer.roles) == instance["meta"]["branch_budget"]


def test_unknown_rule_name_is_named():
    data = read_file(FILES[0])
    instance = copy.deepcopy(data["instances"][0])
    instance["global_constraints"]["total_mood_max"] = 3
    with pytest.raises(TaskFormatError, match="unknown global rule 'total_mood_max'"):
        convert(data["domain"], instance, 0, "x")


def _import_and_verify(tmp_path, source: Path, expected: int) -> None:
    from pipeline.import_agentce import run_import

    cfg = compose_config(
        [
            f"source={source}",
            f"release.output_root={tmp_path}",
            "release.crosscheck=false",
            "release.workers=2",
        ],
        "import_agentce",
        "apps",
    )
    assert run_import(cfg) == 0
    release = tmp_path / "agentce-5x5-v1.0.0"
    report = json.loads((release / "import_report.json").read_text())["instances"]
    assert len(report) == expected
    assert sum(status["unique"] for status in report) == expected  # measured: all are unique
    verified = verify_release(release, SolverSettings(), milp=None, workers=2)
    assert verified.ok and len(verified.tasks) == expected
    assert (release / "LICENSE").read_text() == (ANCHORS / "LICENSE").read_text()  # verbatim
    card = (release / "README.md").read_text()
    assert "\nlicense: mit\n" in card.split("---")[1]
    assert "Copyright (c) 2026 xuanyu" in card and "uservan/AgentCE_Bench" in card
    assert "drawn from one distribution" not in card  # not our construction: not claimed


def test_an_import_without_a_licence_stops(tmp_path):
    import shutil

    from gridbench.errors import UserError
    from pipeline.import_agentce import run_import

    shutil.copy(FILES[0], tmp_path / FILES[0].name)
    cfg = compose_config(
        [f"source={tmp_path}", f"release.output_root={tmp_path}/out"], "import_agentce", "apps"
    )
    with pytest.raises(UserError, match="no licence for the imported data"):
        run_import(cfg)
    assert not (tmp_path / "out").exists()


def test_import_one_file_and_verify(tmp_path):
    _import_and_verify(tmp_path, next(f for f in FILES if f.name.startswith("travel")), 35)


@pytest.mark.slow
def test_import_all_six_files_and_verify(tmp_path):
    _import_and_verify(tmp_path, ANCHORS, 210)
