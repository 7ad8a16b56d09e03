"""Every preset (the paper's three, 10x10, 15x15 and 20x20) built whole, re-proved with
CP-SAT and a MILP solver, audited (no rule-free reader above chance, a transfer classifier
trained on a companion build of another seed included), and its difficulty checked to rise
with B. Slow."""

from __future__ import annotations

import json

import polars as pl
import pytest

from gridbench_core.stats import wilson
from pipeline.integrity import audit
from pipeline.storage.companion import companion_pairs
from pipeline.storage.read import release_pairs
from pipeline.storage.verification import VerifySettings, verify_release
from solvers.ladder import FIXPOINT
from solvers.results import deterministic_settings
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
    from gridbench.commands.release import build

    cfg = compose_config(
        [f"grid={grid}", f"release.output_root={tmp_path}", f"release.cache_root={tmp_path}/c"]
    )
    assert build(cfg) == 0
    release = tmp_path / "gridbench-v2.0.0"
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["counts"]["tasks"] == tasks == manifest["counts"]["certified"]
    assert manifest["counts"]["crosscheck_ok"] == tasks
    report = verify_release(release, VerifySettings(deterministic_settings(10.0), milp, 2))
    assert report.ok and len(report.tasks) == tasks
    audited = audit(release_pairs(release), splits=2, seed=0, companion=companion_pairs(release, 1, 2))
    assert audited["failures"] == [], audited["failures"]
    assert_difficulty_rises_with_b(pl.read_parquet(release / "metadata.parquet"))


def assert_difficulty_rises_with_b(meta):
    """For H >= 5: the share of tasks that need more than the fixpoint never falls from one B
    to a higher one beyond sampling noise (the 95% Wilson intervals overlap), and at the
    highest B at least half of the tasks need more."""
    meta = meta.filter(pl.col("hidden_slots") >= 5)
    budgets = sorted(set(meta["decoy_budget"].to_list()))
    shares = {}
    for budget in budgets:
        depths = meta.filter(pl.col("decoy_budget") == budget)["depth"].to_list()
        beyond = sum(d > FIXPOINT for d in depths)
        shares[budget] = (beyond / len(depths), *wilson(beyond, len(depths)))
    for low_b, high_b in zip(budgets, budgets[1:], strict=False):
        assert shares[high_b][2] >= shares[low_b][1], (low_b, high_b, shares)
    assert shares[budgets[-1]][0] >= 0.5, shares


@pytest.mark.parametrize("grid", ["5x5", "5x7", "5x10", "10x10", "15x15", "20x20"])
def test_every_preset_composes_into_valid_keys(grid):
    from pipeline.config import generation_settings, release_keys
    from pipeline.generation.validate import validate_key

    cfg = compose_config([f"grid={grid}"])
    keys = release_keys(cfg)
    settings = generation_settings(cfg)
    assert keys and all(validate_key(key, settings) is None for key in keys)
