"""Hostile round 4, our own cases on the fronts the outside runs tried least: verify's
file-level reading, show, report, hub and every command's output folder. Each case failed
before the fix it names; each is one line (or one failure) now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests.helpers_release import compose_config, copy_release


@pytest.mark.parametrize("relative", ["manifest.json", "tasks/toy", "answers/course"])
def test_a_release_json_that_names_a_key_twice_is_refused(relative, tiny_release, tmp_path):
    """``{"format": "x", ..., "format": "gridbench-release/1"}``: Python keeps the last value,
    other readers the first; a verified file cannot mean two things."""
    from pipeline.storage.read import read_manifest
    from pipeline.storage.safe import ReleaseError, read_json

    copy = copy_release(tiny_release, tmp_path / "copy")
    path = copy / relative if relative.endswith(".json") else sorted((copy / relative).glob("*.json"))[0]
    key = "format" if relative == "manifest.json" else "task_id"
    path.write_text(path.read_text().replace("{", f'{{"{key}": "decoy", ', 1))
    name = path.relative_to(copy).as_posix()
    with pytest.raises(ReleaseError, match="appears twice in one object"):
        read_json(copy, name)
    if relative == "manifest.json":
        with pytest.raises(ReleaseError, match="appears twice"):
            read_manifest(copy)


def test_verify_fails_a_manifest_with_a_key_twice(tiny_release, tmp_path, capsys):
    from gridbench.commands.verify import verify

    copy = copy_release(tiny_release, tmp_path / "copy")
    text = (copy / "manifest.json").read_text()
    (copy / "manifest.json").write_text(text.replace("{", '{"format": "other", ', 1))
    assert verify(compose_config([f"release={copy}", "verify.workers=1"], "verify", "apps")) == 1
    err = capsys.readouterr().err
    assert "manifest.json: not valid JSON (the key 'format' appears twice in one object)" in err


@pytest.fixture(scope="module")
def run(tiny_release, tmp_path_factory) -> Path:
    from gridbench.commands.evaluate import evaluate

    out = tmp_path_factory.mktemp("runs")
    cfg = compose_config([f"release={tiny_release}", f"output_root={out}", "workers=1"], "evaluate", "apps")
    assert evaluate(cfg) == 0
    return next((out / tiny_release.name).iterdir())


def test_show_refuses_a_transcript_that_is_a_folder(run, tmp_path, capsys):
    import shutil

    from gridbench.commands.show import main

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    row = json.loads((copy / "episodes.jsonl").read_text().splitlines()[0])
    transcript = copy / "transcripts" / f"{row['episode_id']}.json.gz"
    transcript.unlink()
    transcript.mkdir()
    assert main([f"run={copy}", f"task={row['task_id']}"]) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("trial=abc", "trial=abc must be a whole number"),
        ("trial=-1", "trial=-1 must be"),
        ("failure_rate=nan", "failure_rate=nan"),
    ],
)
def test_show_names_a_bad_number_option(option, said, run, capsys):
    from gridbench.commands.show import main

    row = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    assert main([f"run={run}", f"task={row['task_id']}", option]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_an_output_folder_that_is_a_file_is_one_line(run, tmp_path, capsys):
    """Every command's writes go through run_cli: a file where the output folder should be
    (or a folder where a file should be) is one line, not a traceback."""
    from gridbench.commands.report import report
    from pipeline.cli import run_cli

    blocker = tmp_path / "report"
    blocker.write_text("a file, not a folder")
    cfg = compose_config([f"runs_root={run.parent}", f"output={blocker}"], "report", "apps")
    with pytest.raises(SystemExit) as stopped:
        run_cli(report, cfg)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith("error: cannot write") and err.count("\n") == 1
    assert "choose another output folder" in err and blocker.read_text() == "a file, not a folder"


def test_hub_names_an_empty_token_variable(tiny_release):
    from gridbench.commands.hub import run_hub

    cfg = compose_config([f"release={tiny_release}", "repo_id=me/grid", "token_env=''"], "hub", "apps")
    with pytest.raises(UserError, match="token_env='' names no environment variable"):
        run_hub(cfg)


@pytest.mark.parametrize("position", [0, 31, 63])
def test_a_listed_digest_that_differs_in_one_hex_digit_is_a_mismatch(position, tiny_release, tmp_path):
    """A digest is compared whole: a manifest may not get away with a file whose SHA-256 only
    begins (or ends) like the one it lists."""
    from pipeline.storage.read import read_manifest
    from pipeline.storage.verification import VerifyReport, check_files

    copy = copy_release(tiny_release, tmp_path / "copy")
    manifest = json.loads((copy / "manifest.json").read_text())
    name = sorted(n for n in manifest["files"] if n.startswith("tasks/"))[0]
    digest = manifest["files"][name]
    manifest["files"][name] = (
        digest[:position] + ("0" if digest[position] != "0" else "1") + digest[position + 1 :]
    )
    (copy / "manifest.json").write_text(json.dumps(manifest))
    report = VerifyReport()
    sound = check_files(copy, read_manifest(copy), report)
    assert name not in sound and f"{name}: digest mismatch (file changed)" in report.file_failures


@pytest.mark.parametrize("change", [-1, 1, -4])
def test_a_task_count_above_or_below_the_listed_files_is_refused(change, tiny_release, tmp_path):
    from pipeline.storage.read import read_manifest
    from pipeline.storage.verification import VerifyReport, check_release

    copy = copy_release(tiny_release, tmp_path / "copy")
    manifest = json.loads((copy / "manifest.json").read_text())
    listed = sum(1 for n in manifest["files"] if n.startswith("tasks/"))
    manifest["counts"]["tasks"] = listed + change
    (copy / "manifest.json").write_text(json.dumps(manifest))
    report = VerifyReport()
    check_release(copy, read_manifest(copy), report)
    expected = f"manifest.json: counts.tasks={listed + change} but {listed} task files are listed"
    assert expected in report.file_failures


@pytest.mark.parametrize(
    "edit", [lambda text: text + "\n", lambda text: " " + text, lambda text: text + "\n" * 5000]
)
def test_an_instruction_padded_with_whitespace_is_not_the_rendered_one(edit):
    """The instruction is compared byte for byte with what the rules render to: padding (a
    trailing line break, leading spaces, thousands of empty lines before the agent's turn) is
    an edit like any other."""
    import dataclasses

    from pipeline.storage.verification import task_shape
    from tests.tiny import TASK

    rel = f"tasks/{TASK.domain}/{TASK.task_id}.json"
    assert "the instruction is not what" not in " ".join(task_shape(TASK, rel))
    padded = dataclasses.replace(TASK, instruction=edit(TASK.instruction))
    assert "the instruction is not what the task's rules render to (edited?)" in task_shape(padded, rel)
