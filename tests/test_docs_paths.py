"""What the prose names exists: every path (``pipeline/storage/read.py``, ``gridbench/env/``)
and every dotted name of ours (``pipeline.storage.read.Release``, ``python -m gridbench.commands.verify``)
in the Markdown files, the docstrings and comments of the Python files and the comments of
conf/ points at a file, a folder, a module or a module's top-level name of this checkout.

A relative path is found from the repository's root, from the folder of the file naming it
or one above it, from conf/ (its groups: ``grid/``) or from one of our packages
(``generation/`` in "pipeline/: generation/, storage/"); paths
inside a release or a run folder (``tasks/``, ``data/answers.parquet``, ...) and in other
projects are not this repository's and are skipped.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from tests import ROOT, parse_source

PACKAGES = ("gridbench_core", "solvers", "domains", "pipeline", "gridbench")
SOURCES = (*PACKAGES, "tests", "bench")
# what a release, a run, an audit or a build writes, and the outputs/ folder that holds them
WRITTEN = frozenset(
    {"tasks", "answers", "data", "shards", "transcripts", "outputs", "cells", "runs", "releases", "audits"}
)
# paths in other projects
ELSEWHERE = frozenset({"trl/trainer/grpo_trainer.py"})
# made by a build, not kept in the checkout: the wheel's copies of conf/ and schemas/ (setup.py)
PLANNED = frozenset({"gridbench_core/_data/", "gridbench_core/_data/conf/", "gridbench_core/_data/schemas/"})
# docs/spec.md is the shared specification, copied verbatim: its paths are a release's
VERBATIM = frozenset({Path("docs/spec.md")})

PATH = re.compile(
    r"(?<![\w./<>{}$@:-])"  # not inside a longer path, a placeholder, a URL or an e-mail
    r"((?:[A-Za-z_][\w.-]*/)+(?:[\w-]+\.(?:py|md|yaml|yml|json|toml|txt|typed)|))"
    r"(?![\w/<{-])"
)
# a path from the root without an extension: ``solvers/propagation``, ``conf/apps``
ROOTED = re.compile(
    r"(?<![\w./<>{}$@:-])((?:gridbench_core|solvers|domains|pipeline|gridbench|tests|bench|conf|docs|schemas)"
    r"(?:/[\w.-]+)+)(?![\w/<{-])"
)
# names that look like paths: the Inspect AI task, the gymnasium environment, and the metric
# names the validation callback logs (gridbench/adapters/validation.py)
NOT_PATHS = frozenset(
    {
        "gridbench/gridbench",
        "gridbench/Grid-v0",
        "gridbench/success",
        "gridbench/success/H",
        "gridbench/success/depth",
    }
)
DOTTED = re.compile(
    r"(?<![\w./-])((?:gridbench_core|solvers|domains|pipeline|gridbench)(?:\.[A-Za-z_]\w*)+)(?![^\x00-\x7f])",
    re.ASCII,
)


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every statement below it (a docstring's owner is always a statement, or
    the module: no expression needs visiting, which was most of a whole ``ast.walk``)."""
    yield node
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, None) or ():
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                yield from _statements(child)


def _python_prose(path: Path) -> Iterator[tuple[int, str]]:
    """The docstrings and comments of a Python file, with their first line."""
    source = path.read_text()
    for node in _statements(parse_source(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    yield body[0].lineno, body[0].value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def _yaml_comments(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if "#" in line:
            yield number, line[line.index("#") :]


def _markdown(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        yield number, re.sub(r"https?://\S+", "", line)


def prose(root: Path) -> Iterator[tuple[Path, int, str]]:
    """Every piece of prose of the checkout: ``(file, line, text)``."""
    for path in sorted([*root.glob("*.md"), *(root / "docs").rglob("*.md")]):
        if path.relative_to(root) not in VERBATIM:
            yield from ((path, line, text) for line, text in _markdown(path))
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*.py")):
            yield from ((path, line, text) for line, text in _python_prose(path))
    for path in sorted((root / "conf").rglob("*.yaml")):
        yield from ((path, line, text) for line, text in _yaml_comments(path))


def path_exists(reference: str, root: Path, named_in: Path) -> bool:
    """Whether ``reference`` names a file or folder of the checkout (see the module's text)."""
    if reference in ELSEWHERE | PLANNED or reference.split("/")[0] in WRITTEN:
        return True
    folders = [root, *(p for p in named_in.parents if p.is_relative_to(root)), root / "conf"]
    folders += [root / package for package in PACKAGES]
    return any((folder / reference).exists() for folder in folders)


@cache
def _top_level_names(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in parse_source(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Try | ast.If):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Assign):
                    names.update(t.id for t in inner.targets if isinstance(t, ast.Name))
                elif isinstance(inner, ast.ImportFrom | ast.Import):
                    names.update((a.asname or a.name).split(".")[0] for a in inner.names)
    return frozenset(names)


def _module_file(dotted: str, root: Path) -> Path | None:
    base = root / dotted.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def name_exists(dotted: str, root: Path) -> bool:
    """Whether ``dotted`` is a module of ours, or a module and a name defined at its top level
    (``pipeline.storage.read.Release``; an attribute after that is not followed)."""
    if dotted in PLANNED:
        return True
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:end]), root)
        if module is not None:
            return end == len(parts) or parts[end] in _top_level_names(module)
    return False


def stale_references(root: Path) -> list[str]:
    """``file:line: reference`` for every path or dotted name that names nothing."""
    found = []
    for path, line, text in prose(root):
        where = f"{path.relative_to(root)}:{line}"
        for match in PATH.finditer(text):
            if not path_exists(match.group(1), root, path):
                found.append(f"{where}: path {match.group(1)}")
        for match in ROOTED.finditer(text):
            reference = match.group(1).rstrip(".")
            if PATH.fullmatch(reference) or reference in NOT_PATHS:
                continue
            if not ((root / reference).exists() or (root / f"{reference}.py").exists()):
                found.append(f"{where}: path {reference}")
        for match in DOTTED.finditer(text):
            name = match.group(1).rstrip(".")
            if not name_exists(name, root):
                found.append(f"{where}: name {name}")
    return found


def test_prose_names_what_exists():
    found = stale_references(ROOT)
    assert not found, "stale references (fix the text, or skip a path that is not ours):\n" + "\n".join(found)


def test_the_mutation_groups_name_existing_files():
    """``make mutate`` reads these paths (and refuses to start when one is missing); the
    equivalent mutants are matched by their module's path."""
    import tomllib

    groups = tomllib.loads((ROOT / "tests/mutation/modules.toml").read_text())
    named = [
        p.split("::")[0] for group in groups.values() for key in ("modules", "tests") for p in group[key]
    ]
    equivalents = tomllib.loads((ROOT / "tests/mutation/equivalent.toml").read_text())["equivalent"]
    named += [entry["module"] for entry in equivalents]
    modules = {p for group in groups.values() for p in group["modules"]}
    assert [p for p in named if not (ROOT / p).exists()] == []
    assert {entry["module"] for entry in equivalents} <= modules


def test_the_checker_finds_a_stale_path_and_a_stale_name(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pipeline" / "storage").mkdir(parents=True)
    (tmp_path / "pipeline" / "__init__.py").write_text(
        '"""See ``storage/read.py`` and storage/cells.py."""\n'
    )
    (tmp_path / "pipeline" / "storage" / "__init__.py").touch()
    (tmp_path / "pipeline" / "storage" / "read.py").write_text(
        "# pipeline.storage.read.Release is here, pipeline.storage.read.Gone is not\nclass Release:\n"
        '    """One release (pipeline.storage.verify checks it)."""\n'
    )
    (tmp_path / "README.md").write_text(
        "Read `pipeline/storage/read.py`, not `gridbench/errors.py`; releases hold `tasks/x/`; "
        "see https://example.org/a/b.py and docs/missing.md. pipeline/storage/read, not pipeline/gone.\n"
    )
    found = stale_references(tmp_path)
    assert sorted(found) == sorted(
        [
            "pipeline/__init__.py:1: path storage/cells.py",
            "pipeline/storage/read.py:1: name pipeline.storage.read.Gone",
            "pipeline/storage/read.py:3: name pipeline.storage.verify",
            "README.md:1: path gridbench/errors.py",
            "README.md:1: path docs/missing.md",
            "README.md:1: path pipeline/gone",
        ]
    )
