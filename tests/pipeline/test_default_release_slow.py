"""Every preset (the paper's three, 10x10, 15x15 and 20x20) built whole and re-proved with
CP-SAT and a MILP solver. Slow."""

from __future__ import annotations

import json

import pytest

from pipeline.storage.verify import verify_release
from solvers.results import SolverSettings
from tests.helpers_release import compose_config


@pytest.mark.slow
@pytest.mark.parametrize(
    ("grid", "tasks", "milp"),
    [
        ("5x5", 210, "cbc"),
        ("5x7", 324, "highs"),
        ("5x10", 540, "highs"),
        ("10x10", 90, "highs"),
        ("15x15", 72, "highs"),
        ("20x20", 72, "highs"),
    ],
)
def test_paper_preset_builds_and_verifies(tmp_path, grid, tasks, milp):
    from pipeline.release import build

    cfg = compose_config(
        [f"grid={grid}", f"release.output_root={tmp_path}", f"release.cells_root={tmp_path}/c"]
    )
    assert build(cfg) == 0
    release = tmp_path / "gridbench-v1.0.0"
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["counts"]["tasks"] == tasks == manifest["counts"]["certified"]
    assert manifest["counts"]["crosscheck_ok"] == tasks
    report = verify_release(release, SolverSettings(), milp=milp, workers=2)
    assert report.ok and len(report.tasks) == tasks


@pytest.mark.parametrize("grid", ["5x5", "5x7", "5x10", "10x10", "15x15", "20x20"])
def test_every_preset_composes_into_valid_keys(grid):
    from pipeline.config import generation_settings, release_keys
    from pipeline.generation.validate import validate_key

    cfg = compose_config([f"grid={grid}"])
    keys = release_keys(cfg)
    settings = generation_settings(cfg)
    assert keys and all(validate_key(key, settings) is None for key in keys)
