"""Bad configurations and unsafe writes: every one is refused before any work with one line
naming the key, and nothing is written outside (or inside) the output root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests import ROOT
from tests.helpers_release import build_small, compose_config, small_release_overrides

BAD_RELEASE = [
    (["release.name=../x"], "release.name="),
    (["release.name=/abs"], "release.name="),
    (["release.version=../../etc"], "release.version="),
    (["release.version=one"], "release.version="),
    (["grid.decoy_budgets=[1000000]"], "grid.decoy_budgets"),
    (["release.domains=[]"], "release.domains=[] is empty"),
    (["release.domains=[toy,toy]"], "names a domain twice"),
    (["release.domains=[chess]"], "unknown domain 'chess'"),
    (["release.tasks_per_cell=0"], "release.tasks_per_cell=0"),
    (["grid.hidden_slots=[]"], "grid.hidden_slots=[] is empty"),
    (["grid.decoy_budgets=[]"], "grid.decoy_budgets=[] is empty"),
    (["grid.hidden_slots=[2,2]"], "repeats [2]"),
    (["release.seed=9223372036854775808"], "release.seed="),
    (["grid.rows=50"], "grid.rows=50"),
    (["generation.one_sided_spread=-1"], "one_sided_spread="),
    (["generation.window_slack_share=5"], "window_slack_share="),
    (["generation.min_resistant_share=1.5"], "min_resistant_share="),
    (["generation.max_attempts=0"], "max_attempts"),
    (["generation.allocation=everywhere"], "allocation="),
    (["generation.crosscheck_solver=gurobi"], "crosscheck_solver="),
    (["solver.time_limit_s=0"], "solver.time_limit_s"),
    (["generation.cage_bits=-1"], "cage_bits="),
    (["generation.cage_cells=0"], "cage_cells="),
    (["generation.min_depth=deep"], "min_depth="),
    # decoys in two cells: probing decides any two, no draw can need search (re-drawn in vain)
    (["generation.min_depth=search", "grid.decoy_budgets=[0,2]"], "min_depth=search: no task of H=2 B=2"),
    (["grid.room_over_budget=-1"], "grid.room_over_budget=-1"),
    (["release.workers=0"], "release.workers=0"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_RELEASE, ids=[o[0][0] for o in BAD_RELEASE])
def test_a_bad_release_setting_is_refused_before_any_work(overrides, message, tmp_path, capsys):
    from gridbench.commands.release import build

    base = [
        o
        for o in small_release_overrides(tmp_path / "out")
        if not any(o.split("=")[0] == x.split("=")[0] for x in overrides)
    ]
    cfg = compose_config(base + overrides)
    with pytest.raises(UserError) as error:
        build(cfg)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert (
        not (tmp_path / "out").exists()
        and sorted(os.listdir(tmp_path)) == ["out"]
        or not any(tmp_path.iterdir())
    )


def test_a_fractional_decoy_budget_is_not_truncated(tmp_path):
    from gridbench.commands.generate import generate

    cfg = compose_config(
        ["domain=toy", "task.decoy_budget=1.5", "task.hidden_slots=2", f"release.cache_root={tmp_path}/cells"]
    )
    with pytest.raises(UserError, match=r"task.decoy_budget=1.5 must be a whole number"):
        generate(cfg)
    assert not (tmp_path / "cells").exists()


BAD_EVAL = [
    (["failure_rates=[]"], "failure_rates=[]"),
    (["failure_rates=[1.5]"], "failure_rates="),
    (["trials=0"], "trials=0"),
    (["env.check_alpha=-1"], "check_alpha=-1"),
    (["env.query_budget=lots"], "query_budget="),
    (["env.max_steps=0"], "max_steps=0"),
    (["shard=3"], "shard="),
    (["env.seed=-1"], "seed=-1"),
    (["env.query_budget=100000000000000000000000000000000"], "query_budget="),
]


@pytest.fixture(scope="session")
def small(small_release) -> Path:
    return small_release


@pytest.mark.parametrize(("overrides", "message"), BAD_EVAL, ids=[o[0][0] for o in BAD_EVAL])
def test_a_bad_evaluation_setting_is_refused(overrides, message, small, tmp_path):
    from gridbench.commands.evaluate import evaluate

    cfg = compose_config([f"release={small}", f"output_root={tmp_path}/runs", *overrides], "evaluate", "apps")
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        evaluate(cfg)
    assert not (tmp_path / "runs").exists()


def test_overwrite_replaces_only_a_release(small, tmp_path):
    from gridbench.commands.release import build

    target = tmp_path / "out" / "precious-v2.0.0"
    target.mkdir(parents=True)
    (target / "thesis.txt").write_text("not a release")
    cfg = compose_config(small_release_overrides(tmp_path / "out", "precious") + ["release.overwrite=true"])
    with pytest.raises(UserError, match="is not a release"):
        build(cfg)
    assert (target / "thesis.txt").read_text() == "not a release"


def test_stale_partial_folders_of_killed_builds_are_cleaned(tmp_path, capsys):
    out = tmp_path / "out"
    stale = out / ".stale-v2.0.0.partial-999999999"
    stale.mkdir(parents=True)
    (stale / "tasks").mkdir()
    build_small(out, "stale")
    assert not stale.exists() and (out / "stale-v2.0.0" / "manifest.json").is_file()
    assert "unfinished build folder" in capsys.readouterr().out


def _command(tmp_path: Path, name: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gridbench.commands.release",
        *small_release_overrides(tmp_path, name),
        f"hydra.run.dir={tmp_path}/hydra-{time.time_ns()}",
    ]


@pytest.mark.slow  # two builds racing
def test_two_concurrent_builds_of_one_version_cannot_both_succeed(tmp_path):
    processes = [
        subprocess.Popen(
            _command(tmp_path, "race"), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outcomes = [(p.wait(180), p.stderr.read()) for p in processes]  # type: ignore[union-attr]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 2], outcomes
    loser = next(err for code, err in outcomes if code == 2)
    assert "already exists" in loser or "another build" in loser
    assert (tmp_path / "race-v2.0.0" / "manifest.json").is_file()
    assert not list(tmp_path.glob(".race-v2.0.0.partial-*"))


@pytest.mark.slow  # a subprocess and a signal
@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_ctrl_c_or_sigterm_prints_one_line_and_exits_130_or_143(tmp_path, stop, code):
    command = [
        sys.executable,
        "-m",
        "gridbench.commands.release",
        "release.name=interrupted",
        f"release.output_root={tmp_path}",
        f"release.cache_root={tmp_path}/cells",
        "release.tasks_per_cell=3",
        f"hydra.run.dir={tmp_path}/hydra",
    ]  # the whole grid
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # once the workers are generating (the first progress line): a signal during the pool's
    # start can wait for a worker that never started (a race of multiprocessing's own)
    assert process.stdout is not None and "tasks" in process.stdout.readline()
    process.send_signal(stop)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code and "Traceback" not in err and "leaked" not in err, err
    assert len([line for line in err.splitlines() if line.strip()]) <= 2
    assert not (tmp_path / "interrupted-v2.0.0").exists()
    assert not list(tmp_path.glob(".interrupted-v2.0.0.partial-*"))


@pytest.mark.parametrize(
    ("command", "stop", "when"),
    [
        ("release", "INT", "summary"),
        ("release", "TERM", "summary"),
        ("release", "INT", "rename"),
        ("train", "INT", "summary"),
    ],
    ids=["release-INT", "release-TERM", "release-INT-in-its-rename", "train-INT"],
)
def test_a_signal_after_the_result_is_written_names_it_and_exits_0(tmp_path, command, stop, when):
    """A signal sweep over `gridbench release`: a Ctrl-C arriving once the release was renamed
    into place (its manifest complete; 2 runs of 58) said "interrupted ... run the command
    again" with exit 130, and the rerun then refused, as the release existed. The signal
    comes here as the command is about to print its summary (its result written), or just
    as the release's folder is renamed into place: the line names the release (or training
    set) as written completely, and the exit code is 0."""
    name = "late"
    if command == "release":
        overrides = small_release_overrides(tmp_path, name)
        result = tmp_path / f"{name}-v2.0.0"
    else:
        overrides = [
            "size=8",
            "shard_size=8",
            "domains=[toy]",
            "candidates_per_slot=6",
            "parts=[{grid: 4x4, hidden_slots: [1, 4], decoy_budgets: [0, 3]}]",
            f"name={name}",
            f"output_root={tmp_path}",
            "workers=1",
        ]
        result = tmp_path / f"{name}-v2.0.0"
    module = "release" if command == "release" else "train"
    code = (
        "import os, pathlib, signal, sys, time\n"
        f"import gridbench.commands.{module} as command\n"
        "def late(*args, **kwargs):\n"  # the summary: the result is written
        f"    os.kill(os.getpid(), signal.SIG{stop})\n"
        "    time.sleep(5)\n"
        "    sys.stdout.write('ran on\\n')\n"
        "real = pathlib.Path.rename\n"
        "def rename(self, target):\n"  # the temporary folder renamed: the signal comes at once
        "    moved = real(self, target)\n"
        "    if '.partial-' in self.name:\n"
        f"        os.kill(os.getpid(), signal.SIG{stop})\n"
        "    return moved\n"
        + ("command.print = late\n" if when == "summary" else "pathlib.Path.rename = rename\n")
        + "from gridbench.commands import main\n"
        f"sys.argv = ['gridbench', {command!r}, *{overrides!r}, 'hydra.run.dir={tmp_path}/hydra']\n"
        "main.run()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    head = "interrupted (Ctrl-C)" if stop == "INT" else "terminated (SIGTERM)"
    what = "the release" if command == "release" else "the training set"
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert out.stderr == (
        f"{head} after {what} at {result} was written completely; it is kept as it is, nothing to run again\n"
    ), out.stderr
    assert "ran on" not in out.stdout and (result / "manifest.json").is_file()
    assert not list(tmp_path.glob(f".{name}-v2.0.0.*"))  # no partial folder, no build lock
