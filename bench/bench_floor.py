"""The solvers' floor (issue 30): how much of a task's CPU is spent inside the solvers' own
calls, and what that alone costs the two speed targets on this machine.

Every proof stays (the CP-SAT certificate, the HiGHS cross-check of a release) and the output
stays byte for byte, so every solve the generator makes stays too: repair's solves decide
which bounds a task gets, the measures' optimisation gives its distance to ambiguity. This
script generates tasks in one process (no pool, no writing) and counts, per task:

- CPU: the whole generation (drawing, repair, certificate, measures, cross-check);
- solvers: the CPU of every CP-SAT solve (with the few lines of Python around the call), of
  every MILP solve (the model handed to HiGHS and solved) and of the parsing of the CP-SAT
  protos; the number of CP-SAT solves and models;

for each part of the training set (``conf/apps/train.yaml``, one shard in four each) and for
the default release (``conf/config.yaml``, keys sampled across its H x B grid), and projects
the 2 cores' wall of the 100,000-task training set and of the 324-task release if everything
but the solvers cost nothing (the floor) and as measured (generation only: no writing, no
start-up).

    .venv/bin/python bench/bench_floor.py              # 120 tasks a part and of the release
    .venv/bin/python bench/bench_floor.py --tasks 480
    make bench ARGS=--quick                      # 24 tasks each
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import solvers.cpsat as cpsat  # noqa: E402
import solvers.milp as milp  # noqa: E402

SPENT: Counter[str] = Counter()
CORES = 2


def _count_solves() -> None:
    """Add the CPU of each CP-SAT solve (``CpSatModel.solve``: the solver's call and the few
    lines around it), each MILP solve (``_solve_highs`` / ``_solve_cbc``: the model handed over
    and solved) and each CP-SAT proto parse to SPENT. CPU, not wall: under load, or beside
    another process, a wall clock counts the waits too."""

    def timed(owner, name: str, label: str, count: str | None = None) -> None:  # type: ignore[no-untyped-def]
        inner = getattr(owner, name)

        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                SPENT[label] += (time.process_time() - start) * 1000.0
                if count:
                    SPENT[count] += 1

        setattr(owner, name, wrapper)

    timed(cpsat.CpSatModel, "solve", "cp-sat ms", "cp-sat solves")
    timed(cpsat._Proto, "parse", "parse ms", "cp-sat models")
    timed(milp, "_solve_highs", "milp ms")
    timed(milp, "_solve_cbc", "milp ms")


def _measure(label: str, make, show: bool = True) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Run ``make()`` (it returns the number of tasks made); per task: CPU, solver ms, counts
    (printed unless ``show`` is False)."""
    SPENT.clear()
    start = time.process_time()
    tasks = make()
    cpu = (time.process_time() - start) * 1000.0 / tasks
    solver = (SPENT["cp-sat ms"] + SPENT["milp ms"] + SPENT["parse ms"]) / tasks
    row = {
        "cpu": cpu,
        "solver": solver,
        "cp-sat": SPENT["cp-sat ms"] / tasks,
        "milp": SPENT["milp ms"] / tasks,
        "parse": SPENT["parse ms"] / tasks,
        "solves": SPENT["cp-sat solves"] / tasks,
        "models": SPENT["cp-sat models"] / tasks,
    }
    if show:
        print(
            f"  {label:34s} {cpu:6.1f} ms CPU a task; in the solvers {solver:5.1f} ms ({solver / cpu:4.0%}: "
            f"CP-SAT {row['cp-sat']:.1f} in {row['solves']:.1f} solves, its protos {row['parse']:.1f} in "
            f"{row['models']:.1f} models, MILP {row['milp']:.1f})"
        )
    return row


def train_datasets(count: int) -> list[tuple[str, Any]]:
    """``(grid, dataset)`` of each training part (``conf/apps/train.yaml``), ``count`` tasks
    each, seed 3 (bench/bench_python.py generates the same)."""
    from hydra import compose, initialize_config_dir

    from gridbench_core.paths import CONF_DIR
    from pipeline.config import register_configs
    from pipeline.generation.dataset import create_dataset
    from pipeline.generation.keys import GenerationSettings

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR / "apps"), version_base=None):
        train = compose(config_name="train")
    return [
        (
            str(part.grid),
            create_dataset(
                domains=list(train.domains),
                size=count,
                seed=3,
                grid=str(part.grid),
                hidden_slots=range(part.hidden_slots[0], part.hidden_slots[1] + 1),
                decoy_budgets=range(part.decoy_budgets[0], part.decoy_budgets[1] + 1),
                candidates_per_slot=int(train.candidates_per_slot),
                settings=GenerationSettings(crosscheck=bool(train.crosscheck)),
            ),
        )
        for part in train.parts
    ]


def _train_parts(count: int) -> list[dict[str, float]]:
    rows = []
    for grid, dataset in train_datasets(count):

        def make(dataset=dataset) -> int:  # type: ignore[no-untyped-def]
            for index in range(count):
                dataset.made(index)
            return count

        rows.append(_measure(f"train part {grid}", make))
    return rows


def _release(count: int, show: bool = True) -> dict[str, float]:
    from hydra import compose, initialize_config_dir

    from gridbench_core.paths import CONF_DIR
    from pipeline.config import generation_settings, register_configs, release_keys
    from pipeline.generation.build import generate_task

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config")
    settings, keys = generation_settings(cfg), release_keys(cfg)
    sample = keys[:: max(len(keys) // count, 1)][:count]

    def make() -> int:
        for key in sample:
            generate_task(key, settings)
        return len(sample)

    return _measure(f"default release ({len(keys)} tasks)", make, show)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tasks", type=int, default=120, help="tasks of each training part and of the release"
    )
    parser.add_argument("--quick", action="store_true", help="24 tasks each")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    if args.quick:
        args.tasks = 24
    _count_solves()
    _release(2, show=False)  # the solvers' libraries loaded and warm: no import is any stage's cost
    print(f"== the solvers' floor ({args.tasks} tasks each, one process, generation only)")
    parts = _train_parts(args.tasks)
    release = _release(args.tasks)
    mean = {key: sum(part[key] for part in parts) / len(parts) for key in parts[0]}
    for label, size, row in (("training set", 100_000, mean), ("default release", 324, release)):
        floor = size * row["solver"] / 1000.0 / CORES
        whole = size * row["cpu"] / 1000.0 / CORES
        print(
            f"  {label} of {size:,} tasks on {CORES} cores: the solvers alone {floor:7.1f} s "
            f"({floor / 60:.1f} min), the whole generation {whole:7.1f} s ({whole / 60:.1f} min); "
            f"{row['cpu'] - row['solver']:.1f} ms of CPU a task outside the solvers"
        )


if __name__ == "__main__":
    main()
