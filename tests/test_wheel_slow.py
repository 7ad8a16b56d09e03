"""The wheel as a user installs it: built from the checkout, installed with its core
dependencies only into a fresh virtual environment outside the checkout, then
``gridbench release`` and ``gridbench verify`` from an empty folder. Slow (it downloads or
reuses the dependencies): ``make test-slow``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import ROOT

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (command, out.stdout[-2000:], out.stderr[-4000:])
    return out


def test_the_wheel_installs_anywhere_and_its_command_builds_and_verifies(tmp_path):
    dist = tmp_path / "dist"
    # built from a copy: setuptools writes its build folder and egg-info into the source
    # folder, and an egg-info in the checkout hides the editable install's metadata
    source = tmp_path / "source"
    skip = shutil.ignore_patterns(
        ".venv", ".git", "outputs", "build", "*.egg-info", "__pycache__", ".hypothesis"
    )
    shutil.copytree(ROOT, source, ignore=skip)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-w",
            str(dist),
            str(source),
        ],
        tmp_path,
    )
    (wheel,) = dist.glob("gridbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "gridbench_core/_data/conf/config.yaml",
        "gridbench_core/_data/conf/apps/verify.yaml",
        "gridbench_core/_data/conf/apps/agent/llm.yaml",  # a link in the checkout, a file in the wheel
        "gridbench_core/_data/schemas/task.schema.json",
        "gridbench_core/templates/system.txt",
        "gridbench_core/py.typed",
        "gridbench/py.typed",
        "gridbench/commands/main.py",
        "pipeline/evaluation/assets/explorer.html",  # the results explorer's page, script and style
        "pipeline/evaluation/assets/explorer.js",
        "pipeline/evaluation/assets/explorer.css",
        "gridbench_core/_data/conf/apps/view.yaml",
    ):
        assert needed in names, needed
    assert not any(name.startswith(("tests/", "bench/", "outputs/")) for name in names)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    gridbench = str(venv / "bin" / "gridbench")
    assert "release" in run([gridbench, "--help"], work).stdout
    # a command's own help page reads the packaged configuration and its groups
    page = run([gridbench, "eval", "--help"], work).stdout
    assert "usage: gridbench eval" in page and "agent: budget_aware" in page and "+experiment: paper" in page
    run(
        [
            gridbench,
            "release",
            "release.domains=[toy,course]",
            "grid=5x5",
            "grid.hidden_slots=[2]",
            "grid.decoy_budgets=[0,3]",
            "release.name=wheel",
            "release.workers=1",
        ],
        work,
    )
    release = work / "outputs" / "releases" / "wheel-v2.0.0"
    assert (release / "manifest.json").is_file()
    out = run([gridbench, "verify", f"release={release}"], work)
    assert re.search(r"^all\s+4\s+4\s+0$", out.stdout, re.MULTILINE), out.stdout
    assert "release verified" in out.stdout
    code = (
        "import gridbench, sys; r = gridbench.load_release(sys.argv[1]); t = r[0]; "
        "print(len(r), gridbench.score(t.task, t.answer['truth'], t.answer)['success'])"
    )
    out = run([str(venv / "bin" / "python"), "-c", code, str(release)], work)
    assert out.stdout.split() == ["4", "True"], out.stdout
    # the core install has neither the audit's nor the Hub's extra, and says which to add
    out = subprocess.run(
        [gridbench, "hub", f"release={release}", "repo_id=me/x", "dry_run=true"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "gridbench[hub]" in out.stderr, out.stderr
