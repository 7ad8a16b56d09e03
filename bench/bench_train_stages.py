"""Where a training task's time goes: CPU ms a task for each part of the training preset
(conf/apps/train.yaml: 5x5, 5x7, 5x10, 10x10), by stage and by kind of CP-SAT solve, in one
process (no pool), shards made as `make train` makes them. Prints numbers; never fails on
speed. The 100,000-task target of issue 30 needs the mix's mean under about 12 ms a task on
2 cores; this says which stage a change would have to come from.

    .venv/bin/python bench/bench_train_stages.py            # 200 tasks a part
    .venv/bin/python bench/bench_train_stages.py --per-part 50
    make bench ARGS=--quick                                  # 50 a part
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import inspect
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402,F401  loaded before any stage is timed: an import is no stage's cost
import pyarrow  # noqa: E402,F401

cpu = time.process_time
spent: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)

# (module, attribute, stage): the stages as the build calls them (nested ones are indented)
STAGES = (
    ("pipeline.generation.build", "draw_draft", "draw the draft (grid, decoys, rules)"),
    ("pipeline.generation.build", "settle_bounds", "repair and bounds"),
    ("pipeline.generation.build", "draw_filtered", "filtered candidates"),
    ("pipeline.generation.build", "build_task", "assemble the task"),
    ("pipeline.generation.build", "seal", "seal (certificate + measures)"),
    ("pipeline.generation.seal", "CpSatModel", "  build the CP-SAT model"),
    ("pipeline.generation.seal", "certify", "  certificate"),
    ("pipeline.generation.seal", "measure", "  measures"),
    ("pipeline.generation.measures", "distance_to_ambiguity", "    distance to ambiguity"),
    ("pipeline.generation.measures", "decoy_resistance", "    propagation"),
    ("pipeline.generation.measures", "reasoning_depth", "    ladder depth"),
    ("pipeline.generation.measures", "effort", "    search nodes + joint bits"),
    ("pipeline.storage.tables", "arrow_table", "Arrow tables"),
    ("pipeline.storage.tables", "parquet_bytes", "Parquet files"),
)


def timed(module_name: str, attribute: str, stage: str) -> None:
    module = importlib.import_module(module_name)
    inner = getattr(module, attribute)

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = cpu()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[stage] += cpu() - start
            calls[stage] += 1

    setattr(module, attribute, wrapper)


def time_solves() -> None:
    """CP-SAT's own solve calls, by the proof or measure that asked (its caller's name)."""
    import solvers.cpsat as cpsat

    inner: Callable[..., Any] = cpsat.CpSatModel.solve

    def solve(self: Any, *args: Any, **kwargs: Any) -> Any:
        frame = inspect.currentframe().f_back  # type: ignore[union-attr]
        caller = frame.f_code.co_name  # type: ignore[union-attr]
        if caller == "other_completion":  # repair's search, or the certificate's proof
            caller += f" ({frame.f_back.f_code.co_name})"  # type: ignore[union-attr]
        start = cpu()
        try:
            return inner(self, *args, **kwargs)
        finally:
            spent[f"solve: {caller}"] += cpu() - start
            calls[f"solve: {caller}"] += 1

    cpsat.CpSatModel.solve = solve  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-part", type=int, default=200, help="tasks of each part")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="50 tasks a part")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    if args.quick:
        args.per_part = 50
    from omegaconf import OmegaConf

    from pipeline.storage.shards import TrainPlan, make_shard, shard_jobs

    config = OmegaConf.to_container(OmegaConf.load(ROOT / "conf/apps/train.yaml"))
    assert isinstance(config, dict)
    parts = len(config["parts"])
    config.update(
        size=args.per_part * parts,
        shard_size=args.per_part,
        seed=args.seed,
        domains=["course", "meal", "pc_build", "shopping", "travel", "workforce"],
        candidates_per_slot=25,
    )
    config.pop("defaults", None)
    plan = TrainPlan.from_config(config)
    with tempfile.TemporaryDirectory() as folder:
        jobs = shard_jobs(plan, Path(folder))
        make_shard(dataclasses.replace(jobs[0], index=99_999, count=4))  # warm: imports, caches
        for module_name, attribute, stage in STAGES:
            timed(module_name, attribute, stage)
        time_solves()
        print(f"training preset, {args.per_part} tasks a part (seed {args.seed}), CPU ms a task, one process")
        rows: dict[str, dict[str, float]] = {}
        totals = {}
        for job in jobs:
            spent.clear()
            start = cpu()
            make_shard(job)
            totals[job.grid] = 1000.0 * (cpu() - start) / job.count
            rows[job.grid] = {stage: 1000.0 * seconds / job.count for stage, seconds in spent.items()}
    grids = list(totals)
    print(f"{'':42s}" + "".join(f"{grid:>9s}" for grid in grids) + f"{'mean':>9s}")
    print(
        f"{'whole task':42s}"
        + "".join(f"{totals[g]:9.2f}" for g in grids)
        + f"{sum(totals.values()) / len(grids):9.2f}"
    )
    names = [stage for _, _, stage in STAGES] + sorted(
        {s for r in rows.values() for s in r if s.startswith("solve")}
    )
    for stage in names:
        values = [rows[g].get(stage, 0.0) for g in grids]
        print(
            f"{stage[:42]:42s}" + "".join(f"{v:9.2f}" for v in values) + f"{sum(values) / len(values):9.2f}"
        )
    solves = sum(v for r in rows.values() for s, v in r.items() if s.startswith("solve")) / len(grids)
    mean = sum(totals.values()) / len(grids)
    print(f"CP-SAT's own solves: {solves:.2f} of {mean:.2f} ms ({100 * solves / mean:.0f}%)")
    print(
        f"100,000 tasks of this mix on 2 workers at this rate: {100_000 * mean / 2 / 1000 / 60:.1f} minutes"
    )


if __name__ == "__main__":
    main()
