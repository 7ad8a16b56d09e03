"""The whole default release (324 tasks), built and re-proved with CP-SAT and CBC. Slow."""

from __future__ import annotations

import json

import pytest

from pipeline.verify_release import verify_release
from solvers.results import SolverSettings
from tests.helpers_release import compose_config


@pytest.mark.slow
def test_default_release_builds_and_verifies(tmp_path):
    from pipeline.release import build

    cfg = compose_config([f"release.output_root={tmp_path}", f"release.cells_root={tmp_path}/c"])
    assert build(cfg) == 0
    release = tmp_path / "gridbench-v1.0.0"
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["counts"]["tasks"] == 324 == manifest["counts"]["certified"]
    assert manifest["counts"]["crosscheck_ok"] == 324
    report = verify_release(release, SolverSettings(), with_cbc=True, workers=2)
    assert report.ok and len(report.tasks) == 324
