"""Import of the reference implementation's published files (the six anchors)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gridbench_core.task import TaskFormatError
from gridbench_core.task_io import task_from_dict
from pipeline.storage.agentce import convert, read_file
from pipeline.storage.verification import VerifySettings, verify_release
from solvers.results import SolverSettings
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
    from gridbench.commands.import_agentce import run_import

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
    verified = verify_release(release, VerifySettings(SolverSettings(), None, 2))
    assert verified.ok and len(verified.tasks) == expected
    # what the release alone cannot prove is named, not passed over (the card is rebuilt and matches)
    assert any(note.startswith("LICENSE: the imported data's own licence") for note in verified.unverified)
    assert any(note.startswith("config: an import") for note in verified.unverified)
    assert (release / "LICENSE").read_text() == (ANCHORS / "LICENSE").read_text()  # verbatim
    card = (release / "README.md").read_text()
    assert "\nlicense: mit\n" in card.split("---")[1]
    assert "Copyright (c) 2026 xuanyu" in card and "uservan/AgentCE_Bench" in card
    assert "drawn from one distribution" not in card  # not our construction: not claimed


def test_an_import_without_a_licence_stops(tmp_path):
    import shutil

    from gridbench.commands.import_agentce import run_import
    from gridbench_core.errors import UserError

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


def _source(tmp_path: Path, content: str | None) -> Path:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "LICENSE").write_text((ANCHORS / "LICENSE").read_text())
    if content is not None:
        (folder / "course.json").write_text(content)
    return folder


HOSTILE_SOURCES = [
    ("[" * 200_000 + "]" * 200_000, "nested deeper than"),
    ('{"domain": "course", "rows": 5, "cols": 5, "instances": "all of them"}', "'instances' must be a list"),
    ('{"domain": "course", "rows": 5, "cols": 5, "instances": [7]}', "instance 0: not a JSON object"),
    ('{"domain": ["course"], "rows": 5, "cols": 5, "instances": []}', "has no mapping"),
    (
        '{"domain": "course", "rows": 5, "cols": 5, "instances": [{"instance_id": 1, "meta": 1, '
        '"global_constraints": 1, "item_pool": 1, "truth_solution": 1, "partial_solution": 1, "slots": 1}]}',
        "instance 0: malformed",
    ),
    ("\xff\xfe not json", "not valid JSON"),
]


@pytest.mark.parametrize(("content", "message"), HOSTILE_SOURCES, ids=[m for _, m in HOSTILE_SOURCES])
def test_a_hostile_source_file_is_one_line_and_exit_2(content, message, tmp_path, capsys):
    from gridbench.commands.import_agentce import run_import
    from pipeline.cli import run_cli

    source = _source(tmp_path, content)
    cfg = compose_config(
        [f"source={source}", f"release.output_root={tmp_path}/out"], "import_agentce", "apps"
    )
    with pytest.raises(SystemExit) as stop:
        run_cli(run_import, cfg)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1 and err.startswith("error: ")
    assert not (tmp_path / "out").exists()


def test_a_source_that_is_a_fifo_or_a_link_is_not_read(tmp_path):
    import os

    from gridbench.commands.import_agentce import run_import
    from gridbench_core.errors import UserError
    from tests.hostile import deadline

    source = _source(tmp_path, None)
    os.mkfifo(source / "course.json")
    cfg = compose_config(
        [f"source={source}/course.json", f"release.output_root={tmp_path}/out"], "import_agentce", "apps"
    )
    with deadline(20), pytest.raises((UserError, FileNotFoundError)):
        run_import(cfg)
    for target in ("/dev/zero", FILES[0]):
        (source / "course.json").unlink()
        (source / "course.json").symlink_to(target)
        with deadline(20), pytest.raises((UserError, FileNotFoundError)) as refused:
            run_import(
                compose_config(
                    [f"source={source}", f"release.output_root={tmp_path}/out"], "import_agentce", "apps"
                )
            )
        assert "symlink" in str(refused.value) or "no AgentCE dataset files" in str(refused.value)
    assert not (tmp_path / "out").exists()
