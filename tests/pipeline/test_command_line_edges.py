"""The command line against what an outside run tried (hostile round 4): every case is one
``error:`` line and exit 2 before any work, or works as documented, never a traceback.

- interpolations that can only fail inside the job are resolved (and refused) before it;
- ``+key`` adds only at the documented extension points; thousands of keys are one line;
- a value outside ASCII, or with spaces Hydra would drop, says how to write it;
- a multirun checks every swept value and the launcher's parallel jobs first;
- a read-only command writes nothing in the folder it runs in (Hydra neither);
- ``--version`` and ``--help`` into a full disk are one line;
- the packaged configuration comes from the install (or its checkout), never from a ``conf/``
  that merely sits beside the packages, and a broken one is named.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests import ROOT

GRIDBENCH = Path(sys.executable).parent / "gridbench"


def precheck_line(folder: str, name: str, argv: list[str], capsys) -> str:
    """The one line the pre-check prints for ``argv`` (it must refuse it with exit 2)."""
    from pipeline.cli import precheck

    with pytest.raises(SystemExit) as stopped:
        precheck(folder, name, argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "\x1b" not in err
    return err


def passes(folder: str, name: str, argv: list[str]) -> None:
    from pipeline.cli import precheck

    precheck(folder, name, argv)  # no SystemExit: the job would run


# -- interpolations that would fail only inside the job ----------------------------------------

INTERPOLATIONS = [
    ("release=${path:../../etc}", "no such default path"),
    ("release=${oc.env:GRIDBENCH_H27_UNSET}", "GRIDBENCH_H27_UNSET"),
    ("release=${nope.x}", "nope.x"),
    ("release=${release}", "Recursive interpolation"),
    ('verify.workers=${oc.decode:"[1,2]"}', "verify.workers"),
    ("verify.workers=${oc.env:GRIDBENCH_H27_WORDS}", "verify.workers"),
]


@pytest.mark.parametrize(("override", "named"), INTERPOLATIONS, ids=[i[0] for i in INTERPOLATIONS])
def test_an_interpolation_that_cannot_resolve_is_one_line_before_the_job(
    override, named, capsys, monkeypatch
):
    monkeypatch.delenv("GRIDBENCH_H27_UNSET", raising=False)
    monkeypatch.setenv("GRIDBENCH_H27_WORDS", "many")
    line = precheck_line("apps", "verify", [override], capsys)
    assert named in line and "interpolation" in line


def test_hydra_s_own_keys_that_would_fail_inside_hydra_are_one_line(capsys, monkeypatch, tmp_path):
    """Found by an outside audit (helper-39): an unset variable in ``hydra.job.env_copy`` and a
    run folder (``hydra.run.dir``, ``hydra.output_subdir``) that cannot be made ended in a
    traceback from inside Hydra (exit 1). They are one line and exit 2 before the job, and a
    run folder that can be made is made as Hydra makes it."""
    monkeypatch.delenv("GRIDBENCH_NO_SUCH_VAR", raising=False)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    line = precheck_line(
        "apps", "verify", ["release=/nowhere", "hydra.job.env_copy=[GRIDBENCH_NO_SUCH_VAR]"], capsys
    )
    assert "hydra.job.env_copy" in line and "GRIDBENCH_NO_SUCH_VAR" in line and "not set" in line
    line = precheck_line("apps", "verify", ["release=/nowhere", f"hydra.run.dir={blocked}/run"], capsys)
    assert line.startswith("error: hydra.run.dir: the folder ") and "cannot be made" in line
    line = precheck_line("apps", "verify", ["release=/nowhere", f"hydra.output_subdir={blocked}/x"], capsys)
    assert line.startswith("error: hydra.output_subdir: ") and "cannot be made" in line
    line = precheck_line(
        "apps", "verify", ["release=/nowhere", "hydra.run.dir=${oc.env:GRIDBENCH_NO_SUCH_VAR}"], capsys
    )
    assert "GRIDBENCH_NO_SUCH_VAR" in line and "hydra.run.dir" in line and "interpolation" in line
    monkeypatch.setenv("GRIDBENCH_SOME_VAR", "1")
    passes(
        "apps",
        "verify",
        ["release=/nowhere", "hydra.job.env_copy=[GRIDBENCH_SOME_VAR]", f"hydra.run.dir={tmp_path}/r/s"],
    )
    assert (tmp_path / "r" / "s").is_dir()


def test_hydra_s_flags_are_read_as_hydra_reads_them(capsys, monkeypatch):
    """The pre-check took ``-c job`` (Hydra's short ``--cfg job``) for an override ``job`` and
    refused a command line Hydra runs; and it left every ``--`` flag to Hydra, so a misspelt
    key beside ``--cfg job`` was Hydra's error and exit 1. It now reads the flags with Hydra's
    own parser: the overrides beside a flag are checked (one line, exit 2) and the flag's run is
    Hydra's; a flag Hydra does not know is argparse's usage line and exit 2, as Hydra gives it."""
    from gridbench.commands.verify import main
    from pipeline.cli import precheck

    for flags in (
        ["-c", "job"],
        ["--cfg", "job"],
        ["--cfg", "all", "--resolve"],
        ["-p", "verify", "-c", "job"],
    ):
        assert precheck("apps", "verify", [*flags, "release=/nowhere"]) is False  # Hydra's to run
        line = precheck_line("apps", "verify", [*flags, "release.nme=x"], capsys)
        assert "full_key: release" in line
    monkeypatch.setattr(sys, "argv", ["verify", "-c", "job", "release=/nowhere", "verify.workers=1"])
    main()
    out = capsys.readouterr().out
    assert "release: /nowhere" in out and "workers: 1" in out
    with pytest.raises(SystemExit) as stopped:
        precheck("apps", "verify", ["--no-such-flag", "release=/nowhere"])
    assert stopped.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_hydra_s_own_help_page_takes_the_command_s_keys(capsys, monkeypatch):
    """``gridbench verify --hydra-help release=X`` ended in a traceback: Hydra composes that
    page from its own configuration alone with every override of the line, and ``release`` is
    not one of Hydra's keys. The line is checked as any other (a misspelt key is one line, exit
    2) and Hydra is given its own overrides only; other command lines reach Hydra unchanged."""
    from gridbench.commands.verify import main
    from pipeline.cli import hydra_help_argv

    assert hydra_help_argv(["--hydra-help", "release=/x", "hydra.run.dir=/r", "+hydra.x=1"]) == [
        "--hydra-help",
        "hydra.run.dir=/r",
        "+hydra.x=1",
    ]
    kept = ["-m", "hydra/launcher=basic", "~hydra.job.env_set", "--hydra-help"]
    assert (
        hydra_help_argv(["-m", "hydra/launcher=basic", "seed=1,2", "~hydra.job.env_set", "--hydra-help"])
        == kept
    )
    assert hydra_help_argv(["--hydra-help", "hydrate=1", "release.name=hydra.x"]) == ["--hydra-help"]
    for line in (["--cfg", "job", "release=/x"], ["release=/x", "hydra.run.dir=/r"]):
        assert hydra_help_argv(line) == line  # not Hydra's help page: as it is
    monkeypatch.setattr(sys, "argv", ["verify", "--hydra-help", "release=/nowhere", "verify.workers=1"])
    with pytest.raises(SystemExit) as stopped:  # Hydra ends its help pages so
        main()
    out = capsys.readouterr()
    assert stopped.value.code == 0, out.err
    assert out.out.startswith("Hydra (") and "Traceback" not in out.err
    assert precheck_line("apps", "verify", ["--hydra-help", "release.nme=x"], capsys).count("release") >= 1


def test_a_help_page_into_a_closed_pipe_is_the_pipe_s_exit_code():
    """Found by an outside audit: ``gridbench release --help | head`` could end in a
    BrokenPipeError traceback when the reader left before the page was written."""
    from gridbench_core.errors import PIPE_CLOSED

    code = (
        "import os, sys\n"
        "read, write = os.pipe(); os.close(read); os.dup2(write, 1)\n"
        "sys.argv = ['release', '--help']\n"
        "from gridbench.commands.release import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == PIPE_CLOSED and "Traceback" not in done.stderr, done.stderr


def test_interpolations_are_resolved_for_the_generation_commands_too(capsys, monkeypatch):
    monkeypatch.delenv("GRIDBENCH_H27_UNSET", raising=False)
    assert "GRIDBENCH_H27_UNSET" in precheck_line(
        "", "config", ["release.name=${oc.env:GRIDBENCH_H27_UNSET}"], capsys
    )
    assert "no such default path" in precheck_line("", "config", ["release.output_root=${path:x}"], capsys)
    monkeypatch.setenv("GRIDBENCH_H27_SET", "named")
    passes("", "config", ["release.name=${oc.env:GRIDBENCH_H27_SET}", "release.cache_root=${path:cache}"])
    passes("apps", "verify", ["release=${path:release}"])  # the documented resolver works


# -- additions: only at the documented extension points ------------------------------------------

ADDITIONS = [
    ("apps", "verify", "+relase.name=typo"),
    ("apps", "verify", "++relase.name=typo"),
    ("apps", "verify", "+agent.kwargs.depth=2"),  # verify has no agent
    ("", "config", "+relase.name=typo"),
    ("", "config", "+release.nmae=x"),
    ("apps", "evaluate", "+agent.depth=2"),
    ("apps", "evaluate", "+env.budget=3"),
]


@pytest.mark.parametrize(
    ("folder", "name", "override"), ADDITIONS, ids=[a[2] + "@" + a[1] for a in ADDITIONS]
)
def test_an_added_key_outside_the_extension_points_is_refused(folder, name, override, capsys):
    line = precheck_line(folder, name, [override], capsys)
    key = override.lstrip("+").split("=")[0]
    assert f"{key} is not a setting of this command" in line and "+experiment=paper" in line


def test_an_optional_group_set_without_plus_says_to_add_it(capsys):
    line = precheck_line("apps", "evaluate", ["experiment=paper"], capsys)
    assert "experiment is an optional group: add it with +experiment=OPTION" in line
    passes("apps", "evaluate", ["+experiment=paper"])
    # the evaluation's option, added to the release: named as another command's
    line = precheck_line("", "config", ["+experiment=paper"], capsys)
    assert "experiment/paper sets failure_rates, which this command does not have" in line


@pytest.mark.parametrize(
    ("name", "override"),
    [("verify", "~verify"), ("verify", "~solver"), ("verify", "~release"), ("report", "~runs_root")],
)
def test_deleting_a_setting_is_one_line_before_the_job(name, override, capsys):
    """``~verify`` composed (the app's top-level config allows it) and then failed inside the
    job with a traceback: every setting is read, so a deletion is refused up front."""
    line = precheck_line("apps", name, [override], capsys)
    key = override[1:]
    assert f"{override}: deleting a setting is not supported" in line and f"({key}=VALUE)" in line


def test_the_documented_additions_pass(tmp_path):
    passes("apps", "evaluate", ["+experiment=paper"])
    passes("apps", "evaluate", ["+agent.kwargs.depth=2"])
    passes("apps", "evaluate", ["+agent.kwargs={depth: 2}"])
    passes("apps", "verify", ["++verify.workers=1"])  # ++ on a key that exists sets it
    passes("", "config", ["++release.seed=3", f"release.cache_root={tmp_path}"])


def test_twenty_thousand_added_keys_are_one_line(capsys):
    line = precheck_line("apps", "verify", [f"+k{i}=1" for i in range(20_000)], capsys)
    assert "20000 key=value arguments" in line


# -- values the grammar cannot take as written -----------------------------------------------------


def test_a_value_outside_ascii_says_how_to_quote_it(capsys):
    line = precheck_line("apps", "verify", ["release=/tmp/caf\u00e9/release"], capsys)
    assert "must be quoted" in line and "release='/tmp/caf\u00e9/release'" in line
    assert "LexerNoViableAlt" not in line
    passes("apps", "verify", ["release='/tmp/caf\u00e9/release'"])


@pytest.mark.parametrize("override", ["repo_id= me/gridbench", "repo_id=me/gridbench ", "release=\t/tmp/x"])
def test_spaces_that_hydra_would_drop_are_refused(override, capsys):
    folder_name = ("apps", "hub") if override.startswith("repo_id") else ("apps", "verify")
    line = precheck_line(*folder_name, [override], capsys)
    assert "spaces around it" in line


def test_control_characters_in_an_argument_reach_the_terminal_escaped(capsys):
    line = precheck_line("apps", "verify", ["relase\x1b[31m=x"], capsys)
    assert "\\x1b" in line


# -- multirun -----------------------------------------------------------------------------------

MULTIRUN = [
    (["-m", "domain=nope"], "Could not find 'domain/nope'"),
    (["-m", "domain=course,nope", "task.hidden_slots=1"], "available options in 'domain'"),
    (
        ["-m", "task.hidden_slots=1,2", "task.decoy_budget=${oc.env:GRIDBENCH_H27_UNSET}"],
        "GRIDBENCH_H27_UNSET",
    ),
    (["-m", "domain=toy", "hydra.launcher.n_jobs=100000"], "hydra.launcher.n_jobs=100000"),
    (["-m", "domain=toy", "hydra.launcher.n_jobs=-5"], "hydra.launcher.n_jobs=-5"),
    (["-m", "task.hidden_slots=range(0,1000000000000)"], "more than 100000 jobs"),
    (["-m", "domain=toy", "+relase.name=x"], "relase.name is not a setting"),
]


@pytest.mark.parametrize(("argv", "named"), MULTIRUN, ids=[" ".join(m[0][1:]) for m in MULTIRUN])
def test_a_multirun_is_checked_before_any_job(argv, named, capsys, monkeypatch):
    monkeypatch.delenv("GRIDBENCH_H27_UNSET", raising=False)
    assert named in precheck_line("", "config", argv, capsys)


def test_a_good_multirun_passes_the_check(tmp_path):
    passes(
        "", "config", ["-m", "domain=toy,course", "task.hidden_slots=1,2", f"release.cache_root={tmp_path}"]
    )
    passes("", "config", ["-m", "domain=toy", "hydra.launcher.n_jobs=2", "hydra.launcher.n_jobs=-1"])


def test_generate_multirun_with_an_unknown_domain_is_one_error_line(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gridbench.commands.generate",
            "-m",
            "domain=nope",
            f"release.cache_root={tmp_path}/c",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert done.stderr.count("\n") == 1 and not any(tmp_path.iterdir())


# -- the folder a command runs in ---------------------------------------------------------------


def _gridbench(*args: str, cwd: Path, stdout=subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    command = [str(GRIDBENCH)] if GRIDBENCH.exists() else [sys.executable, "-m", "gridbench.commands.main"]
    return subprocess.run(
        [*command, *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=180
    )


def test_a_read_only_command_writes_nothing_where_it_runs(tiny_release, tmp_path):
    """Hydra keeps no run folder and no log file: verify (and the hub's dry run) from any
    folder, a read-only one included, leave it as it was."""
    here = tmp_path / "here"
    here.mkdir()
    done = _gridbench("verify", f"release={tiny_release}", "verify.workers=1", cwd=here)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(os.listdir(here)) == []
    refused = _gridbench("verify", "release=nowhere", cwd=here)
    assert refused.returncode == 2 and sorted(os.listdir(here)) == []
    if os.geteuid() != 0:  # root writes anywhere: the listing above is the test then
        here.chmod(0o555)
        try:
            again = _gridbench("verify", f"release={tiny_release}", "verify.workers=1", cwd=here)
            assert again.returncode == 0, again.stderr[-2000:]
        finally:
            here.chmod(0o755)


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["verify", "--help"],  # the command's own help page
        pytest.param(["--help"], marks=pytest.mark.slow),  # the same path as --version
        pytest.param(["mcp", "--help"], marks=pytest.mark.slow),
        pytest.param(["show", "--help"], marks=pytest.mark.slow),
    ],
    ids=lambda args: " ".join(args),
)
def test_help_and_version_into_a_full_disk_are_one_line(args, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = _gridbench(*args, cwd=tmp_path, stdout=full)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: cannot write the standard output"), done.stderr
    assert done.stderr.count("\n") == 1


def _verify_into(release: Path, cwd: Path, stdout: str, buffered: bool) -> subprocess.CompletedProcess[str]:
    """``gridbench verify`` of ``release`` with its standard output a pipe whose reader has
    gone (``gone``), the full disk (``full``) or closed (``closed``)."""
    command = [str(GRIDBENCH)] if GRIDBENCH.exists() else [sys.executable, "-m", "gridbench.commands.main"]
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        environment["PYTHONUNBUFFERED"] = "1"
    args = [*command, "verify", f"release={release}", "verify.workers=1"]
    if stdout == "gone":
        process = subprocess.Popen(
            args, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader stops before the command writes a byte (`| head -0`)
        err = process.stderr.read().decode()
        return subprocess.CompletedProcess(args, process.wait(timeout=180), "", err)
    if stdout == "full":
        with open("/dev/full", "w") as full:
            return subprocess.run(
                args, cwd=cwd, env=environment, stdout=full, stderr=subprocess.PIPE, text=True, timeout=180
            )
    return subprocess.run(  # no standard output at all
        args,
        cwd=cwd,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
        timeout=180,
        preexec_fn=lambda: os.close(1),
    )


@pytest.mark.parametrize(
    ("stdout", "buffered"),
    [
        ("gone", True),
        ("full", False),
        ("closed", True),
        pytest.param("gone", False, marks=pytest.mark.slow),
        pytest.param("full", True, marks=pytest.mark.slow),
    ],
)
def test_a_command_whose_output_cannot_be_written_ends_in_one_line_or_none(
    tiny_release, tmp_path, stdout, buffered
):
    """Found by an outside audit: `verify | head -1` exited 120 (buffered) or printed a
    BrokenPipe traceback through Hydra (unbuffered); into a full disk it added "Exception
    ignored" and exit 120 to its line; with no standard output it raised AttributeError. A
    reader that has gone ends the command with 141 (a shell's SIGPIPE) and nothing on stderr;
    a full disk with one line and exit 2; no standard output at all is a verify like any other."""
    if stdout == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    done = _verify_into(tiny_release, tmp_path, stdout, buffered)
    expected = {"gone": (141, 0), "full": (2, 1), "closed": (0, 0)}[stdout]
    assert (done.returncode, done.stderr.count("\n")) == expected, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    if stdout == "full":
        assert done.stderr.startswith("error: no space left to write"), done.stderr


def test_show_answers_help():
    from gridbench.commands.show import main

    assert main(["--help"]) == 0


# -- where the packaged configuration comes from ----------------------------------------------------


def _fake_install(site: Path, data: bool) -> None:
    """``site`` as a site-packages folder: our packages (core copied, so that it resolves
    there), with or without ``gridbench_core/_data/``, and a foreign top-level ``conf/`` beside them."""
    site.mkdir()
    shutil.copytree(
        ROOT / "gridbench_core", site / "gridbench_core", ignore=shutil.ignore_patterns("__pycache__")
    )
    for package in ("pipeline", "gridbench", "solvers", "domains"):
        (site / package).symlink_to(ROOT / package, target_is_directory=True)
    if data:
        for name in ("conf", "schemas"):
            shutil.copytree(ROOT / name, site / "gridbench_core" / "_data" / name, symlinks=False)
    foreign = site / "conf" / "apps"
    foreign.mkdir(parents=True)
    (foreign / "verify.yaml").write_text("release: FOREIGN\n")


def _run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.argv = ['gridbench', *{list(args)!r}]; "
        "from gridbench.commands.main import run; run()"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_wheel_without_its_data_never_reads_a_foreign_conf(tmp_path):
    _fake_install(tmp_path / "site", data=False)
    done = _run_installed(tmp_path / "site", tmp_path, "verify", "release=x")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "lacks its configuration" in done.stderr and "FOREIGN" not in done.stderr
    assert str(tmp_path / "site" / "gridbench_core" / "_data") in done.stderr


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("conf/apps/verify.yaml", "is missing"),
        pytest.param("conf/config.yaml", "is damaged", marks=pytest.mark.slow),
        ("schemas/task.schema.json", "is damaged"),
    ],
)
def test_a_wheel_with_broken_data_is_one_line(damage, said, tmp_path):
    site = tmp_path / "site"
    _fake_install(site, data=True)
    target = site / "gridbench_core" / "_data" / damage
    if said == "is missing":
        target.unlink()
    else:
        target.write_text("{ this: [is not\n")
    done = _run_installed(site, tmp_path, "verify", "release=x")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert said in done.stderr and damage.split("/")[-1] in done.stderr


def test_a_whole_wheel_reads_its_own_data(tmp_path):
    site = tmp_path / "site"
    _fake_install(site, data=True)
    done = _run_installed(site, tmp_path, "verify", "release=x")
    assert done.returncode == 2 and "x is not a release" in done.stderr, done.stderr
    assert "FOREIGN" not in done.stderr


# -- Hydra's reading of the mode -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "known"),
    [
        (["release=/nowhere", "verify.workers=1"], True),
        (["release=/nowhere", "hydra.run.dir={tmp}/h", "hydra.job.name=x"], True),
        (["release=/nowhere", "hydra/job_logging=stdout"], True),
        (["release=/nowhere", "hydra.mode=MULTIRUN"], False),
        (["release=/nowhere", "hydra.mode=RUN"], False),
        (["release=/nowhere", "hydra.mode=${oc.env:GRIDBENCH_NO_SUCH_MODE}"], False),  # Hydra's to read
        (["release=/nowhere", "-m"], False),
    ],
)
def test_hydra_composes_only_to_read_a_mode_it_cannot_know(argv, known, monkeypatch, capsys, tmp_path):
    """A plain run whose composition sets no ``hydra.mode`` runs without Hydra composing it once
    more to read the mode (Hydra's other keys set on the command line too: they are in the
    pre-check's composition); a mode set, a multirun or any Hydra flag has Hydra read it as
    before (the pre-check leaves flags to Hydra). The command's answer is the same either way."""
    from hydra._internal.hydra import Hydra

    from gridbench.commands.verify import main
    from pipeline.cli import precheck

    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    if not any(arg.startswith("-") for arg in argv):
        assert precheck("apps", "verify", argv) is known
    asked = []
    real = Hydra.get_mode
    monkeypatch.setattr(Hydra, "get_mode", lambda self, **kw: asked.append(kw) or real(self, **kw))
    monkeypatch.setattr(sys, "argv", ["verify", *argv])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert Hydra.get_mode is not real  # the spy is back in place once the command has run
    assert len(asked) == (0 if known else 1)
    assert stopped.value.code == 2
    assert "/nowhere is not a release" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("verify", ["release=/nowhere"]),
        ("verify", ["release=/nowhere", "verify.workers=1", "solver.time_limit_s=5"]),
        ("verify", ["release=/nowhere", "hydra.run.dir={tmp}/h", "hydra.job.name=x"]),
        ("verify", ["release=/nowhere", "hydra.job.name=app"]),
        ("verify", ["release=/nowhere", "hydra/job_logging=stdout", "hydra.verbose=true"]),
        ("release", ["domain=toy", "grid=5x5", "release.name=x", "release.workers=1"]),
        ("evaluate", ["release=/nowhere", "+experiment=paper"]),
        ("generate", ["domain=meal", "task.hidden_slots=2", "solver.time_limit_s=5"]),
        ("train", ["size=8", "shard_size=4", "name=kept", "output_root={tmp}"]),
        ("evaluate", ["release=/nowhere", "agent=random"]),
        ("report", ["runs_root={tmp}"]),
        ("audit", ["release=/nowhere"]),
        ("view", ["release=/nowhere"]),
    ],
)
def test_hydra_runs_the_pre_check_s_composition_which_is_the_one_it_would_compose(
    module, argv, monkeypatch, tmp_path
):
    """A plain run is composed once: Hydra's entry point runs the configuration the pre-check
    composed, which is (YAML, flags and node types) what Hydra's loader composes itself for
    that command line, job name and mode; every other composition is Hydra's own."""
    import importlib

    from hydra.core.utils import JobRuntime
    from hydra.types import RunMode

    import pipeline.cli as cli

    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    ran, served = [], []
    real = cli._kept_composition

    def compared(loader, config_name, overrides, run_mode):  # type: ignore[no-untyped-def]
        kept = real(loader, config_name, overrides, run_mode)
        if kept is not None:
            fresh = loader._load_configuration_impl(
                config_name=config_name, overrides=list(overrides), run_mode=run_mode, from_shell=True
            )
            served.append(
                (copy.deepcopy(kept), fresh, JobRuntime.instance().get("name"))
            )  # as served (the run sets its output folder in it)
        return kept

    monkeypatch.setattr(cli, "_kept_composition", compared)
    monkeypatch.setattr(cli, "run_cli", lambda body, cfg: ran.append(cfg))
    monkeypatch.setattr(sys, "argv", [module, *argv])
    main = importlib.import_module(f"gridbench.commands.{module}").main
    monkeypatch.setattr(cli, "precheck", functools.partial(_precheck_without_early, cli.precheck))
    main()
    ((kept, fresh, job),), (cfg,) = served, ran
    assert OmegaConf.to_yaml(kept) == OmegaConf.to_yaml(fresh)
    for node in ("", "hydra", "hydra.job", "hydra.overrides"):
        a, b = (OmegaConf.select(c, node) if node else c for c in (kept, fresh))
        assert [a._get_node_flag(f) for f in ("readonly", "struct")] == [
            b._get_node_flag(f) for f in ("readonly", "struct")
        ], node
    assert kept.hydra.mode is RunMode.RUN and fresh.hydra.mode is RunMode.RUN
    assert (
        kept.hydra.job.name
        == fresh.hydra.job.name
        == ("x" if "hydra.job.name=x" in argv else "app" if "hydra.job.name=app" in argv else job)
    )
    assert cfg.keys() == fresh.keys() - {"hydra"}  # the job's configuration, Hydra's part taken out
    assert getattr(cli._KEPT, "run", None) is None  # used once, and gone with the command


def _precheck_without_early(precheck, folder, name, argv, early=None, job="app"):  # type: ignore[no-untyped-def]
    """The pre-check, without the command's early start (a fork server) for a body not run."""
    return precheck(folder, name, argv, None, job=job)


def test_a_composition_is_kept_for_its_own_command_line_job_and_thread_only():
    """What the pre-check keeps serves only the composition Hydra's entry point asks for next in
    the same thread, for the same command line, job name and search path: another line,
    another job name, a sweep's mode or a second request compose as Hydra always has."""
    import threading

    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.utils import JobRuntime
    from hydra.types import RunMode

    import pipeline.cli as cli
    from gridbench_core.paths import CONF_DIR

    line = ["release=/nowhere"]
    with initialize_config_dir(config_dir=str(CONF_DIR / "apps"), job_name="kept", version_base=None):
        loader = GlobalHydra.instance().config_loader()
    with initialize_config_dir(config_dir=str(CONF_DIR), job_name="kept", version_base=None):
        elsewhere = GlobalHydra.instance().config_loader()  # conf/, not conf/apps/

    def served(
        runtime="kept", overrides=(*line, "hydra.mode=RUN"), mode=RunMode.RUN, name="verify", by=loader
    ):  # type: ignore[no-untyped-def]
        assert cli.precheck("apps", "verify", line, job="kept") is True
        JobRuntime.instance().set("name", runtime)  # the job name of the entry point asking
        return cli._kept_composition(by, name, list(overrides), mode)

    kept = served()
    assert kept is not None and kept.hydra.job.name == "kept"
    assert kept.hydra.mode is RunMode.RUN and list(kept.hydra.overrides.hydra) == ["hydra.mode=RUN"]
    assert cli._kept_composition(loader, "verify", [*line, "hydra.mode=RUN"], RunMode.RUN) is None  # once
    assert served(runtime="cli") is None
    assert served(overrides=(*line, "verify.workers=1", "hydra.mode=RUN")) is None
    assert served(overrides=line) is None
    assert served(mode=RunMode.MULTIRUN) is None
    assert served(name="other") is None
    assert served(by=elsewhere) is None
    other: list[object] = []
    served(overrides=())  # kept again, and its request refused: nothing is kept now
    cli.precheck("apps", "verify", line, job="kept")
    JobRuntime.instance().set("name", "kept")
    thread = threading.Thread(
        target=lambda: other.append(
            cli._kept_composition(loader, "verify", [*line, "hydra.mode=RUN"], RunMode.RUN)
        )
    )
    thread.start()
    thread.join(10)
    assert other == [None]  # another thread's command composes its own
    assert cli._kept_composition(loader, "verify", [*line, "hydra.mode=RUN"], RunMode.RUN) is not None


def test_a_known_mode_is_this_thread_s_only(monkeypatch):
    """Two commands in two threads: the one whose mode is known skips Hydra's reading, the other
    (inside it in time) still reads its own, and after both Hydra reads every mode again."""
    import threading

    from hydra._internal.hydra import Hydra

    from pipeline.cli import _mode_read

    monkeypatch.setattr(Hydra, "get_mode", lambda self, config_name, overrides: "read")
    inside, done, seen = threading.Event(), threading.Event(), {}

    def known() -> None:
        with _mode_read(True):
            seen["known"] = Hydra.get_mode(None, config_name="x", overrides=[])
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=known)
    thread.start()
    inside.wait(10)
    with _mode_read(False):
        seen["unknown"] = Hydra.get_mode(None, config_name="x", overrides=[])
    done.set()
    thread.join(10)
    seen["after"] = Hydra.get_mode(None, config_name="x", overrides=[])
    assert seen == {"known": None, "unknown": "read", "after": "read"}


def test_ctrl_c_while_a_command_is_still_imported_is_one_line():
    """Found by a second outside audit: a Ctrl-C in a command's first few tenths of a second,
    while the entry point still imports the command (before its own handler is set), printed
    a KeyboardInterrupt traceback. It is the command's one line and exit 130."""
    from gridbench_core.errors import INTERRUPTED

    probe = (
        "import gridbench.commands.main as entry\n"
        "def importing():\n"
        "    raise KeyboardInterrupt\n"
        "entry.main = importing\n"
        "entry.run()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, INTERRUPTED + "\n")


def test_a_command_s_help_is_its_own_page_with_its_configuration(capsys):
    """``--help`` says what the command does and shows its own groups and configuration
    (overrides applied), not Hydra's generic page listing every app's groups."""
    from pipeline.cli import help_page

    about = "`gridbench verify`: re-prove a release.\n\nMore."
    page = help_page("apps", "verify", ["--help", "release=/some/where"], about, "gridbench verify")
    assert page.startswith("`gridbench verify`: re-prove a release.\n\nMore.\n\nusage: gridbench verify")
    assert "release: /some/where" in page and "crosscheck_solver: highs" in page
    assert "powered by Hydra" not in page and "agent:" not in page and "hydra:" not in page
    evaluate = help_page("apps", "evaluate", ["-h", "agent=random"], None, "gridbench eval")
    groups = evaluate.split("== Configuration ==")[0]
    assert "\nagent: budget_aware, greedy_local, llm, llm_local, random*, search," in groups
    assert "\n+experiment: paper\n" in groups  # optional: added with +experiment=paper
    release = help_page("", "config", ["-m", "grid=10x10,5x5", "--help"], None, "gridbench release")
    assert "grid: 10x10*, 15x15" in release and "  name: 10x10\n" in release  # a sweep's first job
    with pytest.raises(SystemExit) as stopped:
        help_page("apps", "evaluate", ["--help", "agent=nope"], None, "gridbench eval")
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith("error: ") and "agent/nope" in err, err


@pytest.mark.parametrize(
    "argv, workers",
    [
        ([], 2),
        (["release.workers=3"], 3),
        (["release.workers=1"], None),  # one worker: no fork server
        (["executor=ray"], None),  # another executor's workers
        (["-m", "grid=5x5,5x7"], None),  # a sweep: each job is Hydra's to run
        (["hydra.job.chdir=true"], None),  # workers forked before the run would miss its folder
    ],
)
def test_the_release_starts_its_fork_server_as_soon_as_its_line_is_composed(argv, workers, monkeypatch):
    """``release`` starts its workers' fork server from the pre-check's composed configuration,
    before Hydra composes the line again and sets up its run: with the workers it asks for, and
    not for one worker, another executor (Ray is not started either), a sweep or a run that
    changes its working folder."""
    import gridbench.commands.release as release
    from pipeline.cli import precheck

    started = []
    monkeypatch.setattr(release, "warm", lambda n, module: started.append((n, module)) if n > 1 else None)
    try:
        precheck("", "config", argv, release._early)
    except SystemExit:
        pytest.fail(f"{argv}: the pre-check refused the line")
    assert started == ([] if workers is None else [(workers, "pipeline.storage.cache")])
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()


@pytest.mark.parametrize("stop", ["INT", "TERM"])
def test_ctrl_c_or_sigterm_during_the_writer_s_imports_waits_for_their_end(tmp_path, stop):
    """A signal sweep over `gridbench release`: Ctrl-C landing while the writer's modules were
    being imported (numpy, pyarrow, polars, while the workers generate) left numpy half
    initialised ("module 'numpy' has no attribute 'ndarray'" and a traceback) or was swallowed
    by the import machinery, so that the release ran on to its end with exit code 0 (5 runs
    in 30). ``deferred_interrupts`` holds the signal until the block ends, then the command's
    own handler raises it: the module imported whole, then the interruption."""
    import subprocess

    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(0.6)\nDONE = True\n")
    code = (
        "import os, signal, sys, threading\n"
        "from gridbench_core.errors import Terminated, deferred_interrupts\n"
        "def term(number, frame):\n"
        "    raise Terminated()\n"
        "signal.signal(signal.SIGTERM, term)\n"
        f"threading.Timer(0.2, os.kill, (os.getpid(), signal.SIG{stop})).start()\n"
        "try:\n"
        "    with deferred_interrupts():\n"
        "        import slow_module\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt as error:\n"
        "    print(type(error).__name__, 'slow_module' in sys.modules)\n"
        "print(signal.getsignal(signal.SIGTERM) is term,\n"
        "      signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    raised = "KeyboardInterrupt" if stop == "INT" else "Terminated"
    assert out.stdout.split("\n")[:2] == [f"{raised} True", "True True"], out.stdout


@pytest.mark.parametrize(
    ("stop", "entry", "code", "line"),
    [
        ("SIGTERM", True, 143, "terminated (SIGTERM)"),
        ("SIGINT", True, 130, "interrupted (Ctrl-C)"),
        ("SIGINT", False, None, None),  # an importer (a test, a notebook): its handlers untouched
    ],
    ids=["TERM", "INT", "importer"],
)
def test_a_signal_while_the_console_script_starts_is_its_one_line(stop, entry, code, line):
    """A signal sweep over the first 0.4 s of `gridbench release`: Ctrl-C while it imported
    gave a traceback (from whichever import it hit), inside OmegaConf's composition a
    garbled configuration error with exit code 1, and SIGTERM killed it without a word.
    Until the command runs, either signal now prints the line and ends the process; a
    process that merely imports the module keeps its own handlers."""
    script = (
        "import os, signal, sys, time\n"
        "import gridbench.commands.main as m\n"
        "def composing():\n"  # the command, still importing and composing when the signal comes
        "    print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)\n"
        f"    os.kill(os.getpid(), signal.{stop})\n"
        "    time.sleep(5)\n"
        "    print('ran on')\n"
        "    return 0\n"
        f"if {entry}:\n"
        "    m.main = composing\n"
        "    m.run()\n"
        "composing()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if code is None:  # the importer: Ctrl-C is a KeyboardInterrupt as always
        assert out.stdout == "True\n" and "KeyboardInterrupt" in out.stderr
        return
    assert out.returncode == code and out.stdout == "False\n", (out.stdout, out.stderr)
    assert out.stderr.startswith(line) and len(out.stderr.splitlines()) == 1, out.stderr


def test_a_command_s_body_starts_with_numpy_imported_and_its_own_handlers(tmp_path):
    """A signal sweep over `gridbench audit`: Ctrl-C while numpy initialised (the command's
    libraries import it lazily, gridbench_core.lazy: it runs at its first use, in the body) left
    it without ``bincount`` and ended in a traceback.
    numpy is imported while a signal still ends the command at once (the configuration being
    composed), and the body runs with Ctrl-C a KeyboardInterrupt and SIGTERM the command's."""
    code = (
        "import signal, sys\n"
        "from pipeline import cli\n"
        "def body(cfg):\n"
        "    numpy = sys.modules.get('numpy')\n"  # type() does not load a lazily imported module
        "    print(type(numpy).__name__ == 'module',\n"
        "          signal.getsignal(signal.SIGINT) is signal.default_int_handler,\n"
        "          signal.getsignal(signal.SIGTERM) is cli._terminate)\n"
        f"sys.argv = ['audit', 'release={tmp_path}', 'hydra.run.dir={tmp_path}/h']\n"
        "cli.command('audit')(body)()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "True True True\n", (out.stdout, out.stderr)


@pytest.mark.parametrize("when", ["after its line", "in the teardown"])
def test_sigterm_after_ctrl_c_s_line_keeps_that_line_s_exit_code(tmp_path, when):
    """A signal sweep over `gridbench release` (SIGINT, then SIGTERM 0-0.4 s later): 6 runs in
    23 printed "interrupted (Ctrl-C)" and ended with SIGTERM's code. A SIGTERM just after the
    line raised where the command was (a second line, "terminated", exit 143); one during the
    interpreter's teardown, where Python resets its handlers to the default, killed it (exit
    -15). Once the line is said, a further signal ends the process with that line's code, and
    the teardown ignores them: one line, exit 130."""
    from gridbench_core.errors import INTERRUPTED

    code = (
        "import os, signal, sys, time\n"
        "from pipeline import cli\n"
        "from gridbench.commands import main as m\n"
        "def body(cfg):\n"
        "    raise KeyboardInterrupt()\n"  # Ctrl-C in the command's work
        "entry = cli.command('audit')(body)\n"
        "def command():\n"
        f"    sys.argv = ['gridbench audit', 'release={tmp_path}', 'hydra.run.dir={tmp_path}/h']\n"
        "    entry()\n"
        "    return 0\n"
        "m.main = command\n"
        "class Stderr:\n"  # SIGTERM comes as the line is written
        "    def __init__(self, real):\n"
        "        self.real = real\n"
        "    def write(self, text):\n"
        "        written = self.real.write(text)\n"
        "        if 'interrupted' in text:\n"
        "            self.real.flush()\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            time.sleep(0.3)\n"
        "        return written\n"
        "    def __getattr__(self, name):\n"
        "        return getattr(self.real, name)\n"
        "class Late:\n"  # SIGTERM comes as the interpreter frees __main__'s objects
        "    def __del__(self, kill=os.kill, pid=os.getpid(), term=signal.SIGTERM, sleep=time.sleep):\n"
        "        kill(pid, term)\n"
        "        sleep(0.3)\n"
        + ("sys.stderr = Stderr(sys.stderr)\n" if when == "after its line" else "late = Late()\n")
        + "m.run()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stderr.splitlines()) == (130, [INTERRUPTED]), (out.returncode, out.stderr)


def test_a_held_sigterm_is_delivered_when_ctrl_c_is_ignored(tmp_path):
    """A signal sweep whose runs had SIGINT ignored (started from a script in the background,
    as `nohup cmd &` does): a SIGINT that came while the writer's modules were imported was
    held (deferred_interrupts) and then delivered to SIG_IGN, and the SIGTERM held after it was
    dropped, so the release ran on to its end with exit 0 (2 runs of 40). An ignored signal is
    no longer held, and every held one is delivered."""
    code = (
        "import os, signal\n"
        "from gridbench_core.errors import Terminated, deferred_interrupts\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "def term(number, frame):\n"
        "    raise Terminated()\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "try:\n"
        "    with deferred_interrupts():\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    print('ran on')\n"
        "except Terminated:\n"
        "    print('terminated')\n"
        "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["terminated", "True"], out.stdout


BLAS_PROBE = (
    "import sys, os\n"
    "import {module}\n"
    "assert 'numpy' not in sys.modules\n"
    "before = len(os.listdir('/proc/self/task'))\n"
    "import numpy\n"
    "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')) - before)\n"
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc")
@pytest.mark.parametrize("module", ["gridbench.commands", "gridbench.commands.main"])
@pytest.mark.parametrize("given", [None, "2"])
def test_a_command_s_process_starts_one_openblas_thread_unless_told(module, given):
    """numpy's OpenBLAS starts a spinning thread per further core at import (about 0.1 s of CPU
    each, for nothing: no command multiplies matrices). A command's process sets one thread
    before numpy is imported (every command module is under ``gridbench.commands``); a value
    the user gave stays."""
    done = _run_with_blas_threads(BLAS_PROBE.format(module=module), given)
    assert done.returncode == 0, done.stderr
    value, started = done.stdout.split()
    assert value == (given or "1")
    if given is None:
        assert int(started) == 0  # numpy's import started no thread
    elif (os.cpu_count() or 1) > 1:
        assert int(started) == 1  # the user's two: one more than the main thread


def test_an_mcp_episode_server_starts_one_openblas_thread():
    """``python -m gridbench.mcp`` (a process per episode) sets it too, before its imports."""
    probe = (
        "import os, runpy, sys\n"
        "sys.argv = ['gridbench.mcp']\n"
        "try:\n"
        "    runpy.run_module('gridbench.mcp', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    done = _run_with_blas_threads(probe, None)
    assert done.stdout.split() == ["1"], done.stderr


def _run_with_blas_threads(code: str, given: str | None) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with OPENBLAS_NUM_THREADS set to ``given`` (None: not set)."""
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        environment["OPENBLAS_NUM_THREADS"] = given
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
