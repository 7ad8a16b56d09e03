"""Every code block of README.md and docs/*.md holds (docs/spec.md is the shared specification,
copied verbatim, and is left alone):

- ```python blocks run: the blocks of one page in order, in one namespace, in a temporary
  folder that holds a small release at the path the docs use (README's at the quick start's);
  Hugging Face stays offline, the MCP server is a local subprocess;
- ```bash (sh, shell, console) blocks are checked line by line: a ``make`` target exists in the
  Makefile, and the ``key=value`` overrides of ``make <target> ARGS="..."``, ``gridbench
  <command> ...`` and ``python -m gridbench.commands.<module> ...`` compose against the Hydra
  configuration (a misspelt key fails, as it does on the command line); the servers' and
  Inspect's arguments are checked against theirs; any other command is refused;
- the README's quick start runs end to end (a small release, a baseline evaluation, a report)
  through the ``gridbench`` command in a temporary folder;
- ```yaml and ```json blocks parse; ```text blocks are samples; a block of any other language,
  or none, is refused.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

from tests import ROOT
from tests.helpers_release import compose_config

VERBATIM = frozenset({"docs/spec.md"})
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
PAGES = [page for page in PAGES if page not in VERBATIM]
SHELL = frozenset({"bash", "sh", "shell", "console"})
KNOWN = SHELL | {"python", "yaml", "json", "text"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
QUICK_START = "## Quick start"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    offset: int = 0  # where the block starts in its page's text

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(text: str, page: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with the line of their opening fence."""
    return [
        Block(
            page,
            text.count("\n", 0, match.start()) + 1,
            match.group(1).strip(),
            match.group(2),
            match.start(),
        )
        for match in FENCE.finditer(text)
    ]


def page_blocks(page: str) -> list[Block]:
    return blocks_of((ROOT / page).read_text(), page)


def section(text: str, heading: str) -> str:
    """The text of a ``## `` section, up to the next one."""
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end > 0 else None]


# ---- shell lines --------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One shell command: its words, the ``VAR=value`` it is prefixed with, ``&`` or not."""

    words: list[str]
    env: dict[str, str]
    background: bool


def shell_lines(block: Block) -> list[Line]:
    """The commands of a shell block, split into words as the shell would (continued lines
    joined, comments dropped; a console block's commands are its ``$ `` lines)."""
    text = block.code.replace("\\\n", " ")
    lines = text.splitlines()
    if block.language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    out = []
    for line in lines:
        words = shlex.split(line, comments=True)
        background = bool(words) and words[-1] == "&"  # a server started in the background
        words = words[:-1] if background else words
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value command
            key, value = words[0].split("=", 1)
            env[key], words = value, words[1:]
        if words:
            out.append(Line(words, env, background))
    return out


def command_lines(block: Block) -> list[list[str]]:
    """The words of each command of a shell block."""
    return [line.words for line in shell_lines(block)]


@cache
def make_recipes() -> dict[str, list[str]]:
    """Every target of the Makefile and its recipe lines."""
    recipes: dict[str, list[str]] = {}
    current = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        target = re.match(r"^([a-z][\w-]*):", line)
        if target:
            current = target.group(1)
            recipes[current] = []
        elif line.startswith("\t") and current:
            recipes[current].append(line.strip())
        elif not line.strip():
            current = None
    return recipes


def make_as_gridbench(words: list[str]) -> list[str] | None:
    """``make <target> [ARGS="..."]`` as the ``gridbench`` arguments its recipe runs, or None
    for a target that does not run the ``gridbench`` command; a target the Makefile lacks or a
    variable other than ARGS fails."""
    recipes = make_recipes()
    targets = [w for w in words[1:] if "=" not in w]
    variables = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    assert len(targets) == 1, f"one target per make line: {shlex.join(words)}"
    assert targets[0] in recipes, f"make {targets[0]}: no such target in the Makefile"
    assert set(variables) <= {"ARGS"}, f"make takes ARGS=..., not {sorted(variables)}"
    runs = [line.split() for line in recipes[targets[0]] if line.startswith("$(GB) ")]
    if not runs:
        return None
    (recipe,) = runs
    assert recipe[-1] == "$(ARGS)", recipe
    return recipe[1:-1] + shlex.split(variables.get("ARGS", ""))


@cache
def hydra_config_of(module: str) -> tuple[str, str]:
    """The (folder, config name) a Hydra command composes: ``main = command("name"...)``."""
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
    found = re.search(r'command\("(\w+)"(, folder="root")?[,)]', source)
    assert found, f"{module}: no @command"
    return ("" if found.group(2) else "apps", found.group(1))


def compose_overrides(module: str, overrides: list[str]) -> None:
    """Compose the overrides as the command line would; one sweep (``-m``) is expanded into
    its jobs, the first and the last of which are composed."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pipeline.cli import precheck

    folder, name = hydra_config_of(module)
    if "-m" in overrides or "--multirun" in overrides:
        rest = [o for o in overrides if o not in ("-m", "--multirun")]
        parsed = OverridesParser.create().parse_overrides(rest)
        (jobs,) = BasicSweeper.split_arguments(parsed, None)
        runs = [jobs[0], jobs[-1]]
    else:
        runs = [overrides]
    for argv in runs:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                precheck(folder, name, list(argv))
        except SystemExit:
            pytest.fail(f"{module} {shlex.join(argv)}: {err.getvalue().strip()}")


def check_gridbench(args: list[str]) -> None:
    """``gridbench <command> args``: a command of the console script, and its arguments hold."""
    from gridbench.commands.main import COMMANDS

    assert args and args[0] in COMMANDS, f"gridbench {args[:1]}: no such command"
    command, rest = COMMANDS[args[0]], args[1:]
    if "--help" in rest:
        return
    if args[0] == "mcp":
        from gridbench.mcp.server import parse_args

        parse_args(rest)
    elif args[0] == "show":
        from gridbench.commands.show import main as show

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            show(rest)  # the run named in the docs is not here: an error, but not a usage line
        assert "usage" not in err.getvalue(), f"gridbench show {shlex.join(rest)}: {err.getvalue()}"
    else:
        assert not command.argv_style, args[0]
        compose_overrides(command.module, rest)


def check_python(words: list[str]) -> None:
    assert words[1] == "-m", f"{shlex.join(words)}: run a module with -m"
    module, rest = words[2], words[3:]
    from gridbench.commands.main import COMMANDS

    by_module = {c.module: name for name, c in COMMANDS.items()} | {"gridbench.mcp": "mcp"}
    if module in by_module:
        check_gridbench([by_module[module], *rest])
    elif module == "http.server":  # serving a folder make view wrote
        assert (
            rest[0] == "--directory"
            and rest[1].startswith("outputs/views/")
            and rest[2:3]
            and rest[2].isdigit()
        ), rest
        assert len(rest) == 3, rest
    elif module == "gridbench.adapters.openenv_env":
        from gridbench.adapters.openenv_env import OPTIONS

        options = dict(w.split("=", 1) for w in rest)
        assert set(options) <= set(OPTIONS) and ("release" in options) != ("adaptive" in options), rest
        assert (ROOT / options["adaptive"]).is_file() if "adaptive" in options else True, rest
    elif module == "gridbench.agents.llm.loopback":
        options = dict(w.split("=", 1) for w in rest)
        assert "release" in options and set(options) <= {"release", "port", "rate"}, rest
        int(options.get("port", 0)), float(options.get("rate", 0))
    else:
        pytest.fail(f"python -m {module}: not a command these tests know how to check")


def check_inspect(words: list[str]) -> None:
    from importlib.metadata import entry_points

    assert words[1] in ("eval", "view"), words
    if words[1] == "view":
        return
    from gridbench.adapters.inspect_task import TASK_ARGS

    task = words[2]
    package, _, name = task.partition("/")
    (point,) = [e for e in entry_points(group="inspect_ai") if e.name == package]
    assert hasattr(point.load(), name), f"inspect task {task} is not registered"
    flags = words[3:]
    assert "--model" in flags, "inspect eval needs --model"
    task_args = [flags[i + 1] for i, flag in enumerate(flags) if flag == "-T"]
    assert {arg.split("=", 1)[0] for arg in task_args} <= set(TASK_ARGS), task_args


def check_pip(words: list[str]) -> None:
    assert words[1] == "install", words
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for spec in words[2:]:
        named = re.fullmatch(r"(gridbench|\.)(?:\[([\w,]+)\])?", spec)
        if named and named.group(2):
            assert set(named.group(2).split(",")) <= set(extras), f"pip install {spec}: no such extra"
        elif not named:
            assert re.fullmatch(r"[A-Za-z][\w.-]*(\[[\w,]+\])?", spec), f"pip install {spec}"


def check_command(words: list[str]) -> None:
    """One shell command of the docs (see the module's text); fails on anything unknown."""
    program = Path(words[0]).name
    if program == "make":
        args = make_as_gridbench(words)
        if args is not None:
            check_gridbench(args)
    elif program == "gridbench":
        check_gridbench(words[1:])
    elif program in ("python", "python3"):
        check_python(words)
    elif program == "inspect":
        check_inspect(words)
    elif program == "pip":
        check_pip(words)
    elif program == "export":
        assert all(re.fullmatch(r"[A-Z_][A-Z0-9_]*=.+", w) for w in words[1:]), words
    elif program == "kill":
        assert words[1:] == ["%1"], words
    else:
        pytest.fail(f"{shlex.join(words)}: not a command these tests know how to check")


# ---- the blocks of every page -------------------------------------------------------------


def all_blocks() -> Iterator[Block]:
    for page in PAGES:
        yield from page_blocks(page)


SHELL_BLOCKS = [b for b in all_blocks() if b.language in SHELL]


def test_every_block_has_a_known_language():
    unknown = [f"{b.where}: ```{b.language}" for b in all_blocks() if b.language not in KNOWN]
    assert not unknown, "label every block (```text for output and diagrams):\n" + "\n".join(unknown)


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.where for b in SHELL_BLOCKS])
def test_shell_lines_hold(block):
    lines = command_lines(block)
    assert lines, f"{block.where}: an empty shell block"
    for words in lines:
        check_command(words)


def test_data_blocks_parse():
    for block in all_blocks():
        if block.language in ("yaml", "json"):
            (yaml.safe_load if block.language == "yaml" else json.loads)(block.code)


# ---- python -------------------------------------------------------------------------------


def small_release(root: Path, name: str) -> None:
    from gridbench.commands.release import build

    cfg = compose_config(
        [
            "release.domains=[course,meal]",
            "grid.hidden_slots=[5,7]",
            "grid.decoy_budgets=[0,4]",
            f"release.name={name}",
            f"release.output_root={root}/outputs/releases",
            f"release.cache_root={root}/outputs/cache",
        ]
    )
    assert build(cfg) == 0


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory) -> Path:
    """A folder holding a small release at the docs' path, outputs/releases/gridbench-v2.0.0."""
    root = tmp_path_factory.mktemp("docs")
    small_release(root, "gridbench")
    return root


def run_python(blocks: list[Block], folder: Path, monkeypatch) -> dict:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_HOME", str(folder / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        exec(compile(block.code, block.where, "exec"), namespace)
    return namespace


# what each page's blocks leave behind, checked beyond "it ran"
AFTERWARDS = {
    "docs/python.md": lambda ns: (
        ns["gridbench"].score(ns["record"].task, ns["grid"])["success"]
        and [item.index for item in ns["generated"]] == [0, 1, 2, 3]
        and ns["made"].task.to_dict()["hidden_slots"] == 11
    ),
    "docs/evaluation.md": lambda ns: (
        ns["episode"].steps == 1 and "success" in ns["score_episode"](ns["episode"], ns["answer"])
    ),
    "docs/harnesses.md": lambda ns: ns["mcp_score"]["success"] is False and isinstance(ns["reward"], float),
    "docs/release.md": lambda ns: len(ns["tasks"]) == 4 and len(ns["answers"]) == 8,
    "docs/training.md": lambda ns: (
        ns["source"].level == 3
        and (ns["steps"], ns["over"], ns["solved"]) == (1, True, False)
        and ns["metrics"]["gridbench/success"] == 1.0
        and ns["trl_rewards"] == [0.0, 0.0]
        and ns["trl_source"].stats()["reported"] == 1
    ),
}
PYTHON_PAGES = [p for p in PAGES if p != "README.md" and any(b.language == "python" for b in page_blocks(p))]


def test_the_pages_checked_afterwards_have_python():
    assert set(AFTERWARDS) <= set(PYTHON_PAGES)


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page, docs_folder, monkeypatch):
    namespace = run_python([b for b in page_blocks(page) if b.language == "python"], docs_folder, monkeypatch)
    assert AFTERWARDS.get(page, lambda ns: True)(namespace), page


# ---- the README's quick start, run --------------------------------------------------------


def quick_start_blocks() -> list[Block]:
    text = (ROOT / "README.md").read_text()
    start = text.index(QUICK_START + "\n")
    end = start + len(section(text, QUICK_START))
    return [b for b in blocks_of(text, "README.md") if start < b.offset < end]


def the_two_minutes() -> list[list[str]]:
    """The ``gridbench`` arguments of the quick start's two-minute block (the one that builds,
    evaluates and reports)."""
    for block in quick_start_blocks():
        if block.language in SHELL:
            runs = [make_as_gridbench(w) for w in command_lines(block) if w[0] == "make"]
            if [r[0] for r in runs if r] == ["release", "eval", "report"]:
                return [r for r in runs if r]
    pytest.fail("README's quick start has no block of make release, make eval and make report")


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory) -> tuple[Path, dict[str, float]]:
    """The two-minute block run in an empty folder by the ``gridbench`` command (what each
    ``make`` target's recipe runs); the seconds each command took."""
    folder = tmp_path_factory.mktemp("quick-start")
    seconds = {}
    for args in the_two_minutes():
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "gridbench.commands.main", *args],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        seconds[args[0]] = time.monotonic() - start
        assert done.returncode == 0, (
            f"gridbench {shlex.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return folder, seconds


def test_the_quick_start_runs(quick_start):
    folder, seconds = quick_start
    releases = list((folder / "outputs/releases").iterdir())
    assert [r.name for r in releases] == ["quick-v2.0.0"]
    assert json.loads((releases[0] / "manifest.json").read_text())["counts"]["tasks"] == 8
    assert (folder / "outputs/runs/quick-v2.0.0/search/results.parquet").is_file()
    summary = (folder / "outputs/reports/quick-v2.0.0/summary.md").read_text()
    assert "| search | 8 | 1.000 |" in summary
    assert (folder / "outputs/reports/quick-v2.0.0/heatmap_search.png").is_file()
    print("quick start:", ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))


def test_the_pip_lines_are_the_make_lines():
    """The quick start's ``gridbench`` block runs what its ``make`` block runs."""
    runs = the_two_minutes()
    for block in quick_start_blocks():
        lines = (
            [w for w in command_lines(block) if Path(w[0]).name == "gridbench"]
            if block.language in SHELL
            else []
        )
        if lines:
            assert [w[1:] for w in lines] == runs
            return
    pytest.fail("README's quick start has no gridbench block")


def test_the_readme_python_runs_after_the_quick_start(quick_start, monkeypatch):
    folder, _ = quick_start
    blocks = [b for b in page_blocks("README.md") if b.language == "python"]
    assert blocks
    namespace = run_python(blocks, folder, monkeypatch)
    assert namespace["record"].task_id


# ---- the offline blocks, run (a scripted model on a loopback server) ----------------------


def argv_of(words: list[str]) -> list[str]:
    """What a documented command runs, with this interpreter's environment."""
    program = Path(words[0]).name
    if program == "make":
        args = make_as_gridbench(words)
        assert args is not None, words
        return [sys.executable, "-m", "gridbench.commands.main", *args]
    if program == "gridbench":
        return [sys.executable, "-m", "gridbench.commands.main", *words[1:]]
    if program in ("python", "python3"):
        return [sys.executable, *words[1:]]
    if program == "inspect":
        return [str(Path(sys.executable).parent / "inspect"), *words[1:]]
    pytest.fail(f"{shlex.join(words)}: not a command these tests know how to run")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


OFFLINE = [b for b in SHELL_BLOCKS if "gridbench.agents.llm.loopback" in b.code]


@pytest.mark.slow
@pytest.mark.parametrize("block", OFFLINE, ids=[b.where for b in OFFLINE])
def test_the_offline_blocks_run(block, docs_folder):
    """The blocks that play the release with the scripted loopback model run as written (on a
    free port instead of 8765) and solve every task they play."""
    port, server, printed = str(free_port()), None, ""
    try:
        for line in shell_lines(block):
            words = [word.replace("8765", port) for word in line.words]
            env = {**os.environ, **{k: v.replace("8765", port) for k, v in line.env.items()}}
            if words[0] == "kill":
                assert server is not None, f"{block.where}: kill without a server"
                server.terminate()
                server.wait(10)
                server = None
            elif line.background:
                server = subprocess.Popen(
                    argv_of(words), cwd=docs_folder, env=env, stdout=subprocess.PIPE, text=True
                )
                assert server.stdout is not None and "server at" in server.stdout.readline()
            else:
                done = subprocess.run(
                    argv_of(words), cwd=docs_folder, env=env, capture_output=True, text=True, timeout=300
                )
                assert done.returncode == 0, (
                    f"{shlex.join(words)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
                printed += done.stdout
    finally:
        if server is not None:
            server.kill()
            server.wait(10)
    assert "1.000" in printed, printed[-2000:]


# ---- the checks catch what they must ------------------------------------------------------


BROKEN = {
    "a misspelt key": 'make eval ARGS="agent=search failure_ratse=[0.1]"',
    "an unknown agent": 'make eval ARGS="agent=serach"',
    "a missing target": "make evaluate",
    "a misspelt release key": "gridbench release release.domain=[course]",
    "a bad sweep": (
        ".venv/bin/python -m gridbench.commands.generate -m domain=course,meal task.hiden_slots=1,5"
    ),
    "an unknown command": "gridbench evaluate agent=search",
    "a wrong mcp argument": "gridbench mcp release=R tsak=T",
    "a wrong show argument": "gridbench show run=R task=T rate=0.1",
    "a wrong inspect argument": ".venv/bin/inspect eval gridbench/gridbench --model m -T domain=course",
    "an unknown extra": "pip install 'gridbench[adaptors]'",
    "an unknown program": "curl https://example.org",
}


@pytest.mark.parametrize("line", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_line_fails(line):
    block = Block("test", 1, "bash", line + "\n")
    from gridbench_core.errors import UserError

    with pytest.raises((AssertionError, pytest.fail.Exception, UserError)):
        for words in command_lines(block):
            check_command(words)


def test_a_broken_python_block_fails(docs_folder, monkeypatch):
    block = Block(
        "test", 1, "python", 'import gridbench\ngridbench.load_release("outputs/releases/gone-v2.0.0")\n'
    )
    with pytest.raises(Exception, match="gone"):
        run_python([block], docs_folder, monkeypatch)


def test_blocks_are_found_with_their_language():
    text = "a\n```python\nx = 1\n```\n\n```\nplain\n```\n```bash\nmake test  # c\nA=1 gridbench x &\n```\n"
    found = blocks_of(text, "p.md")
    assert [(b.line, b.language) for b in found] == [(2, "python"), (6, ""), (9, "bash")]
    assert command_lines(found[2]) == [["make", "test"], ["gridbench", "x"]]
