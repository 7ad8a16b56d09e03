"""`make eval`, `make show` and `make release` against hostile names, rows and a full disk:
every name a user gives that becomes a path stays inside its root after interpolation (one
line, exit 2, nothing written anywhere); a full disk is one line and leaves nothing
half-written; a run resumes after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests import ROOT
from tests.helpers_release import compose_config, run_module
from tests.hostile import file_size_limit, snapshot, tiny_overrides


@pytest.fixture
def tiny(tiny_release) -> Path:
    return tiny_release


def _eval_cfg(release: Path, root: Path, *extra: str):
    return compose_config(
        [f"release={release}", f"output_root={root}", "workers=1", *extra], "evaluate", "apps"
    )


ESCAPES = [
    "run_name=../../..",
    "run_name=../../../../tmp/h19-escape",
    "run_name=/tmp/h19-escape",
    "run_name=${oc.env:H19_RUN}",
    "run_name=${oc.env:H19_DOTS}",
    "run_name=a/b",
    "run_name=.hidden",
    "run_name=..",
    f"run_name={'x' * 300}",
    "run_name='ok\x1b[2J'",
    "run_name='two\nlines'",
    "run_name='\u202eevil'",
]


@pytest.mark.parametrize("override", ESCAPES, ids=range(len(ESCAPES)))
def test_a_run_name_that_leaves_the_output_root_is_refused(override, tiny, tmp_path, monkeypatch):
    from gridbench.commands.evaluate import evaluate

    monkeypatch.setenv("H19_RUN", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("H19_DOTS", "../../../x")
    before = snapshot(tmp_path)
    with pytest.raises(UserError, match="run_name=") as refused:
        evaluate(_eval_cfg(tiny, tmp_path / "runs", override))
    assert "\n" not in str(refused.value) and "\x1b" not in str(refused.value)
    assert snapshot(tmp_path) == before  # not even the output root was made


def test_a_run_folder_that_a_link_takes_outside_is_refused(tiny, tmp_path):
    from gridbench.commands.evaluate import evaluate

    (tmp_path / "runs").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "runs" / tiny.name).symlink_to(tmp_path / "outside")
    with pytest.raises(UserError, match="outside"):
        evaluate(_eval_cfg(tiny, tmp_path / "runs"))
    assert not any((tmp_path / "outside").iterdir())


def test_the_command_line_says_one_line_and_exits_2(tiny, tmp_path):
    done = run_module(
        "gridbench.commands.evaluate",
        f"release={tiny}",
        f"output_root={tmp_path}/runs",
        "run_name=../../../escape",
        f"hydra.run.dir={tmp_path}/hydra",
    )
    assert (
        done.returncode == 2 and done.stderr.startswith("error: run_name=") and done.stderr.count("\n") == 1
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path.parent / "escape").exists()


BAD_SETTINGS = [
    (["env.check_alpha=nan", "env.check_budget=paper"], "env.check_alpha=nan"),
    (["env.check_alpha=inf", "env.check_budget=paper"], "env.check_alpha=inf"),
    (["failure_rates=[nan]"], "failure_rates="),
    (["agent.temperature=nan"], "agent.temperature=nan"),
    (["agent=llm", "agent.model=m", "agent.timeout=inf"], "agent.timeout=inf"),
    (["agent.kwargs={depth: 2}"], "the built-in agent 'search' takes none"),
    (["+agent.kwargs={depth: 2}"], "the built-in agent 'search' takes none"),
    (["+agent.depth=2"], "agent.depth is not an agent setting"),
    (
        ["agent._target_=tests.custom_agents.SyncAgent", "+agent.depth=2"],
        "agent.depth is not an agent setting",
    ),
    (["workers=100000"], "workers=100000"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_SETTINGS, ids=[" ".join(o[0]) for o in BAD_SETTINGS])
def test_a_meaningless_setting_is_one_line(overrides, message, tiny, tmp_path):
    from gridbench.commands.evaluate import evaluate

    with pytest.raises(UserError) as refused:
        evaluate(_eval_cfg(tiny, tmp_path / "runs", *overrides))
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert not (tmp_path / "runs").exists()


def _run(tiny: Path, root: Path):
    from gridbench.commands.evaluate import evaluate

    assert evaluate(_eval_cfg(tiny, root)) == 0
    return next((root / tiny.name).iterdir())


def _show(run: Path, task: str, capsys) -> tuple[int, str]:
    from gridbench.commands.show import main

    code = main([f"run={run}", f"task={task}"])
    return code, capsys.readouterr().err


def test_show_never_follows_a_row_out_of_the_run(tiny, tmp_path, capsys):
    run = _run(tiny, tmp_path / "runs")
    row = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    secret = tmp_path / "secret.json.gz"
    secret.write_bytes(b"not for show")
    for bad_id in ("../../../secret", str(secret), "0123456789abcdeg", "0" * 10_000):
        lines = (run / "episodes.jsonl").read_text()
        (run / "episodes.jsonl").write_text(
            lines + json.dumps({**row, "task_id": "evil", "episode_id": bad_id}) + "\n"
        )
        code, err = _show(run, "evil", capsys)
        # the row is refused, or skipped as a row no run keeps: never followed out of the run
        assert code == 2 and err.count("\n") == 1
        assert "names no episode id" in err or "no episode of task 'evil'" in err
        (run / "episodes.jsonl").write_text(lines)


def test_show_skips_rows_it_cannot_read_and_escapes_what_it_prints(tiny, tmp_path, capsys):
    run = _run(tiny, tmp_path / "runs")
    first = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    junk = [b"\xff\xfe not utf-8\n", b"[" * 100_000 + b"\n", b'{"episode_id": 7}\n', b"x" * 2_000_000 + b"\n"]
    with open(run / "episodes.jsonl", "ab") as handle:
        handle.writelines(junk)
    code = __import__("gridbench.commands.show", fromlist=["main"]).main(
        [f"run={run}", f"task={first['task_id']}"]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and first["task_id"] in out
    (run / "episodes.jsonl").unlink()
    os.mkfifo(run / "episodes.jsonl")
    code, err = _show(run, first["task_id"], capsys)
    assert code == 2 and "not a regular file" in err


def test_show_refuses_unknown_options(capsys):
    from gridbench.commands.show import main

    assert main(["run=x", "task=y", "tirals=3"]) == 2
    assert "unknown options ['tirals']" in capsys.readouterr().err


# A full disk: the kernel's file-size limit gives the same failing writes (EFBIG) as a full
# disk (ENOSPC); both are one line, exit 2, and nothing half-written is kept.


def test_a_full_disk_during_eval_is_one_line_and_the_run_resumes(tiny, tmp_path, capsys):
    from gridbench.commands.evaluate import evaluate
    from pipeline.cli import run_cli

    cfg = _eval_cfg(tiny, tmp_path / "runs")
    with file_size_limit(3000), pytest.raises(SystemExit) as stop:  # about two rows
        run_cli(evaluate, cfg)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: a file would pass") and err.count("\n") == 1
    assert "ulimit -f" in err and "nothing half-written was kept" in err
    run = next((tmp_path / "runs" / tiny.name).iterdir())
    rows = (run / "episodes.jsonl").read_bytes()
    assert rows.endswith(b"\n") or rows == b""
    kept = [json.loads(line) for line in rows.splitlines()]  # every line is a whole row
    assert 0 < len(kept) < 4
    assert not [p for p in run.rglob("*") if p.name.endswith(".tmp")]
    assert sorted(p.stem.split(".")[0] for p in (run / "transcripts").iterdir()) == sorted(
        r["episode_id"] for r in kept
    )
    assert evaluate(cfg) == 0  # resumes: every episode once
    ids = [json.loads(line)["episode_id"] for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 4


def test_a_full_disk_during_release_keeps_nothing(tiny, tmp_path, capsys):
    from gridbench.commands.release import build
    from pipeline.cli import run_cli

    root = tiny.parent  # its cells are stored: this build only writes the release
    overrides = [o for o in tiny_overrides(root) if not o.startswith("release.name=")]
    cfg = compose_config([*overrides, "release.name=full"])
    before = set(os.listdir(root))
    with file_size_limit(2000), pytest.raises(SystemExit) as stop:
        run_cli(build, cfg)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "file-size limit" in err and err.count("\n") == 1
    assert set(os.listdir(root)) == before  # no release, no .partial folder, no lock


def test_the_os_errors_a_user_can_fix_are_one_line():
    import errno

    from pipeline.cli import os_error_line

    for number in (errno.ENOSPC, errno.EDQUOT):
        line = os_error_line(OSError(number, os.strerror(number), "/data/x"))
        assert line and line.startswith("no space left to write (/data/x)") and "\n" not in line
    line = os_error_line(OSError(errno.EFBIG, os.strerror(errno.EFBIG), "/data/x"))  # ulimit -f
    assert line and line.startswith("a file would pass this process's file-size limit (/data/x)")
    assert "not allowed to write" in os_error_line(OSError(errno.EACCES, "Permission denied", "/x"))
    assert os_error_line(OSError(errno.EIO, "I/O error")) is None  # a real fault keeps its traceback


def test_a_manifest_config_of_the_wrong_shape_does_not_stop_a_run(tiny, tmp_path):
    from gridbench.commands.evaluate import evaluate
    from tests.helpers_release import copy_release

    copy = copy_release(tiny, tmp_path / "copy")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["config"]["generation"] = "not a mapping"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert evaluate(_eval_cfg(copy, tmp_path / "runs")) == 0


def test_an_eval_past_the_file_size_limit_is_one_line_from_the_command(tiny, tmp_path):
    """Under ``ulimit -f`` the command (Hydra included: it writes no file of its own) ends with
    one line naming the limit, never Hydra's HYDRA_FULL_ERROR hint."""
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1500, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
        f"sys.argv = ['gridbench', 'eval', 'release={tiny}', 'output_root={tmp_path}/runs', 'workers=1']\n"
        "from gridbench.commands.main import run\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "file-size limit" in errors[0] and "HYDRA_FULL_ERROR" not in done.stderr
    assert "Traceback" not in done.stderr and sorted(os.listdir(tmp_path)) == ["runs"]


CORRUPT_TRANSCRIPTS = {
    "a list of numbers": {"transcript": [1, 2, 3]},
    "entries that are neither": {"transcript": [{"x": 1}]},
    "messages then junk": {"transcript": [{"role": "system", "content": "s"}, "junk"]},
    "another episode's": {"episode_id": "ffffffffffffffff", "transcript": []},
    "no transcript": {"note": "nothing here"},
    "a list": [{"role": "system"}],
}


@pytest.mark.parametrize("record", list(CORRUPT_TRANSCRIPTS.values()), ids=list(CORRUPT_TRANSCRIPTS))
def test_a_damaged_transcript_is_an_error_never_shown_as_nothing(record, tiny, tmp_path, capsys):
    import gzip

    run = _run(tiny, tmp_path / "runs")
    row = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    if isinstance(record, dict) and "episode_id" not in record:
        record = {"episode_id": row["episode_id"], **record}
    (run / "transcripts" / f"{row['episode_id']}.json.gz").write_bytes(
        gzip.compress(json.dumps(record).encode())
    )
    code, err = _show(run, row["task_id"], capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "transcript" in err or "entry" in err


def test_an_empty_transcript_says_so(tiny, tmp_path, capsys):
    import gzip

    run = _run(tiny, tmp_path / "runs")
    row = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    record = {"episode_id": row["episode_id"], "task_id": row["task_id"], "transcript": []}
    (run / "transcripts" / f"{row['episode_id']}.json.gz").write_bytes(
        gzip.compress(json.dumps(record).encode())
    )
    from gridbench.commands.show import main

    assert main([f"run={run}", f"task={row['task_id']}"]) == 0
    assert "holds no message and no tool call" in capsys.readouterr().out


def test_a_second_eval_into_the_same_run_is_refused_while_the_first_runs(tiny, tmp_path):
    """Round 8: two evals into one run folder played the same episodes and appended their rows
    side by side. The first holds the folder (an OS lock, gone with its process); the second is
    one line naming the fix, and writes nothing; once the first is done the command resumes."""
    import multiprocessing

    from gridbench.commands.evaluate import evaluate
    from pipeline.evaluation.runs import RunStore

    root = tmp_path / "runs"
    run = _run(tiny, root)  # a finished run: the folder exists, its rows are in
    rows = (run / "episodes.jsonl").read_bytes()
    ready, release = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(run, ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(UserError, match="another eval is writing to .*run_name=NAME") as refused:
            evaluate(_eval_cfg(tiny, root))
        assert "\n" not in str(refused.value)
        assert (run / "episodes.jsonl").read_bytes() == rows
        with pytest.raises(UserError, match="another eval"), RunStore(run).lock():
            pass
        # round 9: a shard of a run that is playing whole plays some of its episodes again
        with (
            pytest.raises(UserError, match="plays some of this one's episodes"),
            RunStore(run, (0, 2)).lock(),
        ):
            pass
    finally:
        release.set()
        holder.join(30)
    assert evaluate(_eval_cfg(tiny, root)) == 0  # free again: resumes, nothing to play
    assert (run / "episodes.jsonl").read_bytes() == rows


def _hold(run, ready, release):
    from pipeline.evaluation.runs import RunStore

    with RunStore(run).lock():
        ready.set()
        release.wait(60)


def test_a_release_rebuilt_under_its_name_with_other_tasks_is_not_resumed_as_done(tiny, tmp_path):
    """Hostile round 8: a release rebuilt with other settings kept its name and task ids, and
    eval resumed its run as done (0 episodes played, the old tasks' success reported). The run
    now holds a digest of the task and answer files it plays."""
    import shutil

    from gridbench.commands.evaluate import evaluate

    release = tmp_path / "rel" / tiny.name
    shutil.copytree(tiny, release)
    root = tmp_path / "runs"
    assert evaluate(_eval_cfg(release, root)) == 0
    assert evaluate(_eval_cfg(release, root)) == 0  # the same files: resumed, nothing to play
    manifest = json.loads((release / "manifest.json").read_text())
    name = next(n for n in sorted(manifest["files"]) if n.startswith("tasks/"))
    manifest["files"][name] = "0" * 64  # as a rebuild with other tasks would list them
    (release / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="holds a run with another configuration .*played_sha256"):
        evaluate(_eval_cfg(release, root))


def test_shards_of_one_splitting_run_side_by_side_and_others_are_refused(tmp_path):
    """Round 9: shard=0/2 and shard=1/2 run together; a whole run beside a shard, or shards of
    two splittings, would play some episodes twice; and a shard with another configuration
    took over run.json while the first, still without a saved episode, was running."""
    import multiprocessing

    from pipeline.evaluation.runs import RunStore

    run = tmp_path / "run"
    ready, release = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold_shard, args=(run, ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with RunStore(run, (1, 2)).lock():  # the other shard of the same splitting
            store = RunStore(run, (1, 2))
            with pytest.raises(UserError, match="another configuration .* that is running now"):
                store.claim({"agent": "other"})  # the holder claimed {"agent": "first"}, no rows yet
        with (
            pytest.raises(UserError, match="plays some of this one's episodes"),
            RunStore(run, (0, 3)).lock(),
        ):
            pass
        with pytest.raises(UserError, match="plays some of this one's episodes"), RunStore(run).lock():
            pass
    finally:
        release.set()
        holder.join(30)
    with RunStore(run, (0, 3)).lock():  # free once the holder is done
        RunStore(run, (0, 3)).claim({"agent": "other"})  # and an unplayed folder is claimed again


def _hold_shard(run, ready, release):
    from pipeline.evaluation.runs import RunStore

    store = RunStore(run, (0, 2))
    with store.lock():
        store.claim({"agent": "first"})
        ready.set()
        release.wait(60)
