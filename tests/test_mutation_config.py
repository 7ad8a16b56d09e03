"""`make mutate`'s configuration names what exists: every module and test path of
tests/mutation/modules.toml, and the module of every equivalent mutant (a moved file would
otherwise stop a group, or silently stop an equivalent from being recognised)."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests import ROOT


def _mutate():
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "tests" / "mutation" / "mutate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_group_names_existing_modules_and_tests_and_each_equivalent_a_group_module():
    mutate = _mutate()
    groups = mutate.load_groups()
    assert "pipeline/storage/verification.py" in groups["verify"]["modules"]
    for group in groups.values():
        for path in group["modules"] + group["tests"]:
            assert (ROOT / path.split("::")[0]).exists(), path
            if "::" in path:  # a renamed test stopped a group's clean run ("not found")
                file, name = path.split("::", 1)
                assert re.search(
                    rf"^def {re.escape(name.split('[')[0])}\(", (ROOT / file).read_text(), re.M
                ), path
    modules = {m for g in groups.values() for m in g["modules"]}
    assert {e["module"] for e in mutate.load_equivalents(groups=groups)} <= modules


def test_a_missing_path_or_a_stale_equivalent_stops_the_run(tmp_path):
    mutate = _mutate()
    config = tmp_path / "modules.toml"
    config.write_text('[g]\nmodules = ["solvers/checker.py"]\ntests = ["tests/solvers/gone.py"]\n')
    with pytest.raises(SystemExit, match=r"\[g\]\.tests .*tests/solvers/gone\.py"):
        mutate.load_groups(config)
    config.write_text('[g]\nmodules = ["env/episode.py"]\ntests = ["tests/solvers"]\n')
    with pytest.raises(SystemExit, match=r"\[g\]\.modules .*env/episode\.py"):
        mutate.load_groups(config)
    equivalents = tmp_path / "equivalent.toml"
    equivalents.write_text(
        '[[equivalent]]\nmodule = "env/episode.py"\nfunction = "f"\nbefore = "a"\nafter = "b"\nreason = "r"\n'
    )
    groups = {"g": {"modules": ["gridbench/env/episode.py"], "tests": ["tests/gridbench/env"]}}
    with pytest.raises(SystemExit, match="env/episode.py is the module of no group"):
        mutate.load_equivalents(equivalents, groups)


def test_a_mutant_s_tests_run_file_by_file_fastest_first():
    """``-x`` stops at the first failing test, so a killed mutant costs its quickest killing
    test; a file's tests stay together (its module fixtures are set up once)."""
    order = _mutate().fastest_first(
        ["b.py::slow", "a.py::x", "b.py::quick", "a.py::z", "c.py::unknown"],
        {"a.py::x": 5.0, "a.py::z": 1.0, "b.py::quick": 0.1, "b.py::slow": 0.3},
    )
    assert order == ["b.py::quick", "b.py::slow", "a.py::z", "a.py::x", "c.py::unknown"]
