"""`python -m gridbench.commands.generate`: the tasks of one (domain, H, B) key, or of every key of a preset.

    python -m gridbench.commands.generate domain=travel task.hidden_slots=7 task.decoy_budget=8
    python -m gridbench.commands.generate -m domain=course,meal task.hidden_slots=1,5 task.decoy_budget=0,4,8

Cells are stored under `release.cache_root`; `python -m gridbench.commands.release` then assembles a
release from them without regenerating (same settings, same seed).
"""

from __future__ import annotations

import time
from pathlib import Path

from omegaconf import DictConfig

from pipeline.cli import command
from pipeline.config import (
    check_generation_config,
    check_keys,
    generation_settings,
    register_configs,
    sweep_keys,
)
from pipeline.storage.cache import make_tasks

register_configs()


def generate(cfg: DictConfig) -> int:
    """Generate and certify the tasks of the cells ``cfg`` selects, stored under ``release.cache_root``."""
    check_generation_config(cfg)
    hidden = [cfg.task.hidden_slots] if cfg.task.hidden_slots is not None else cfg.grid.hidden_slots
    budgets = [cfg.task.decoy_budget] if cfg.task.decoy_budget is not None else cfg.grid.decoy_budgets
    settings = generation_settings(cfg)
    keys = [
        key for h in hidden for b in budgets for key in sweep_keys(cfg, str(cfg.domain.name), int(h), int(b))
    ]
    check_keys(keys, settings)
    start = time.perf_counter()
    label = f"{cfg.domain.name} {cfg.grid.name}"
    made, reused = make_tasks(keys, settings, Path(cfg.release.cache_root), 1, label)
    print(
        f"{label}: {len(made)} tasks ({reused} already stored) certified in "
        f"{time.perf_counter() - start:.2f}s -> {cfg.release.cache_root}"
    )
    return 0


main = command("config", folder="root")(generate)


if __name__ == "__main__":
    main()
