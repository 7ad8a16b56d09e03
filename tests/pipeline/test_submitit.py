"""SLURM through Hydra's submitit launcher: the launcher config composes, and a multirun on
the submitit_local launcher fills the cell store that the release step then assembles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import ROOT
from tests.helpers_release import run_module

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
CELLS = ["grid=5x5", "grid.candidates_per_slot=6"]


def test_the_slurm_launcher_config_composes():
    from hydra import compose, initialize_config_dir

    from pipeline.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.cpus_per_task == 2
    assert "partition" in launcher and launcher.array_parallelism == 256


@pytest.mark.slow
def test_a_submitit_multirun_fills_the_cell_store_the_release_assembles(tmp_path: Path):
    cells = tmp_path / "cells"
    sweep = run_module(
        "gridbench.commands.generate",
        "-m",
        "hydra/launcher=submitit_local",
        *CELLS,
        "domain=toy,course",
        "task.hidden_slots=2,4",
        "task.decoy_budget=0",
        f"release.cache_root={cells}",
        f"hydra.sweep.dir={tmp_path}/sweep",
    )
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    release = run_module(
        "gridbench.commands.release",
        *CELLS,
        "release.domains=[toy,course]",
        "grid.hidden_slots=[2,4]",
        "grid.decoy_budgets=[0]",
        f"release.cache_root={cells}",
        f"release.output_root={tmp_path}/releases",
        f"hydra.run.dir={tmp_path}/run",
    )
    assert release.returncode == 0, release.stderr[-2000:]
    assert "4 tasks (4 reused from" in release.stdout
