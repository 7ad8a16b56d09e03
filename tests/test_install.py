"""The project as a tool: the ``gridbench`` command, default paths defined once, the packaged
configuration found from any folder, and a checkout that does not shadow the install."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gridbench.commands.main import COMMANDS, main
from gridbench_core import paths
from tests import ROOT, parse_source

PACKAGES = ("gridbench_core", "solvers", "domains", "pipeline", "gridbench")


def gridbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "gridbench"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gridbench.commands.main"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_command_lists_its_subcommands_and_refuses_unknown_ones(tmp_path, capsys):
    out = gridbench("--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for name in COMMANDS:
        assert re.search(rf"^  {name}\s", out.stdout, re.MULTILINE), name
    assert main([]) == 2
    assert main(["relase"]) == 2
    assert "unknown command 'relase'" in capsys.readouterr().err
    version = gridbench("--version", cwd=tmp_path)
    assert version.returncode == 0 and re.fullmatch(r"gridbench \d+\.\d+\.\d+\S*\n", version.stdout)


def test_every_command_module_has_a_main_and_answers_help(tmp_path):
    import importlib

    for name, command in COMMANDS.items():
        assert callable(importlib.import_module(command.module).main), name
    out = gridbench("verify", "--help", cwd=tmp_path)
    assert out.returncode == 0 and "release" in out.stdout, out.stderr
    # its own page: the module's docstring, its usage, its configuration; not Hydra's
    assert out.stdout.startswith("`python -m gridbench.commands.verify release=PATH"), out.stdout
    assert "usage: gridbench verify [key=value ...]" in out.stdout and "powered by Hydra" not in out.stdout
    out = gridbench("mcp", "--help", cwd=tmp_path)
    assert out.returncode == 0 and "release" in out.stdout, out.stderr


def test_a_command_run_from_another_folder_reads_the_packaged_conf_and_fails_in_one_line(tmp_path):
    out = gridbench("verify", "release=nowhere", cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "nowhere" in lines[0], out.stderr
    # the default release is outputs/releases/gridbench-v2.0.0 of the folder it runs in
    out = gridbench("verify", cwd=tmp_path)
    assert out.returncode == 2 and str(paths.RELEASE) in out.stderr, out.stderr
    assert not (tmp_path / "outputs" / "releases").exists()


def test_the_default_release_name_is_the_release_config_s():
    release = yaml.safe_load((paths.CONF_DIR / "release" / "default.yaml").read_text())
    assert paths.DEFAULT_NAME == f"{release['name']}-v{release['version']}"
    assert paths.CONF_DIR == ROOT / "conf" and paths.SCHEMA_DIR == ROOT / "schemas"
    assert paths.default("release") == "outputs/releases/gridbench-v2.0.0"
    from gridbench_core.errors import UserError

    with pytest.raises(UserError, match="no such default path"):
        paths.default("nowhere")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_default_paths_are_defined_in_core_paths_only():
    """No module but gridbench_core/paths.py holds a default output path as a value (messages and docs
    may name them), no YAML value starts with outputs/ (they use ${path:...}), and the Makefile
    passes none."""
    defaults = {str(value) for value in paths.DEFAULTS.values()}
    found = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            if file == ROOT / "gridbench_core" / "paths.py":
                continue
            tree = parse_source(file.read_text())
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                    if node.value in defaults or node.value.rstrip("/") in defaults:
                        found.append(f"{file.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    for file in sorted((ROOT / "conf").rglob("*.yaml")):
        for number, line in enumerate(file.read_text().splitlines(), 1):
            value = line.split("#", 1)[0]
            if re.search(r":\s*outputs(/|\s*$)", value):
                found.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    makefile = (ROOT / "Makefile").read_text()
    found += [
        f"Makefile: {line}" for line in makefile.splitlines() if "=outputs/" in line and "##" not in line
    ]
    assert not found, "\n".join(found)


def test_a_checkout_named_gridbench_does_not_shadow_the_install(tmp_path):
    """From the folder that holds a checkout called ``gridbench``, ``import gridbench`` is the
    package (not the checkout as a namespace) and its names work."""
    (tmp_path / "gridbench").symlink_to(ROOT, target_is_directory=True)
    code = "import gridbench; print(gridbench.__file__); print(gridbench.load_release, gridbench.score)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.splitlines()[0]).resolve() == ROOT / "gridbench" / "__init__.py"


def test_the_packages_are_typed_and_versioned():
    import gridbench

    assert (ROOT / "gridbench_core" / "py.typed").exists() and (ROOT / "gridbench" / "py.typed").exists()
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", gridbench.__version__)
