"""`make hub`: the dry run lists exactly the release's files; a missing token, a bad repo id,
a damaged release and an unreachable Hub are each one line and exit 2; the token is written
nowhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests import ROOT
from tests.helpers_release import compose_config, copy_release


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def _run(release: Path, *overrides: str) -> int:
    from gridbench.commands.hub import run_hub

    cfg = compose_config([f"release={release}", *overrides], "hub", "apps")
    return run_hub(cfg)


def test_the_dry_run_is_short_and_verbose_lists_every_file_of_the_release(release, capsys):
    import json

    assert _run(release, "repo_id=me/grid", "dry_run=true") == 0
    short = capsys.readouterr().out.splitlines()
    assert len(short) < 15 and any(line.startswith("  tasks/  8 files") for line in short), short
    assert _run(release, "repo_id=me/grid", "dry_run=true", "verbose=true") == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    manifest = json.loads((release / "manifest.json").read_text())
    assert listed == sorted(manifest["files"]) + ["manifest.json"]
    assert _run(release, "repo_id=me/grid", "dry_run=true", "answers=false", "verbose=true") == 0
    held = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert held and not any(n.startswith("answers/") or n == "data/answers.parquet" for n in held)
    assert set(listed) - set(held) == {n for n in listed if n.startswith("answers/")} | {
        "data/answers.parquet"
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["repo_id=not a repo"], "ORG/NAME"),
        # surrounding spaces (quoted, so that Hydra keeps them) and a trailing line break
        (["repo_id=' me/grid'"], "ORG/NAME"),
        (["repo_id='me/grid '"], "ORG/NAME"),
        (["repo_id='me/grid\n'"], "ORG/NAME"),
        (["repo_id=me/grid", "token_env=GRIDBENCH_NO_SUCH_TOKEN"], "no Hugging Face token"),
    ],
)
def test_bad_input_is_a_clear_error(release, overrides, message):
    with pytest.raises(UserError, match=message):
        _run(release, *overrides)


def test_a_damaged_release_is_not_published(release, tmp_path):
    copy = copy_release(release, tmp_path / "copy")
    next((copy / "tasks").rglob("*.json")).write_text("{}")
    with pytest.raises(UserError, match="does not match its manifest"):
        _run(copy, "repo_id=me/grid", "dry_run=true")


def test_an_unreachable_hub_is_one_line_and_the_token_is_written_nowhere(release, tmp_path):
    token = "hf_gridbenchTESTtoken0123456789"
    env = {**os.environ, "HF_TOKEN": token, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gridbench.commands.hub",
            f"release={release}",
            "repo_id=me/grid",
            f"hydra.run.dir={tmp_path}/hydra",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "upload to me/grid failed" in errors[0]
    assert "Traceback" not in done.stderr and token not in done.stdout + done.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


def test_held_back_answers_leave_the_card_without_an_answers_configuration(release, capsys):
    import yaml

    from gridbench.commands.hub import card_without_answers

    card = card_without_answers((release / "README.md").read_text())
    header = yaml.safe_load(card.split("---\n")[1])
    names = [c["config_name"] for c in header["configs"]]
    assert "answers" not in names and {"metadata", "course", "toy"} <= set(names)
    assert "answers of this release are held back" in card
    assert _run(release, "repo_id=me/grid", "dry_run=true", "answers=false") == 0
    assert "README.md" in capsys.readouterr().out


def test_a_re_signed_release_whose_tables_lie_is_not_published(release, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.helpers_release import redigest

    copy = copy_release(release, tmp_path / "copy")
    table_path = sorted((copy / "data" / "tasks").glob("*.parquet"))[0]
    table = pq.read_table(table_path)
    pq.write_table(table.append_column("leak", pa.array(["truth"] * table.num_rows)), table_path)
    redigest(copy, tables=False)
    with pytest.raises(UserError, match="does not match its manifest"):
        _run(copy, "repo_id=me/grid", "dry_run=true")
