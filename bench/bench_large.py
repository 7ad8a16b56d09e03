"""Large grids: per-task medians on one core for the four grid sizes of issue 12, at the
largest decoy budget the generator certifies there (B = 30; larger budgets are reported as
not certifiable, see README Limits), and the whole 3-task 20x20 release command.

    make bench                       # part of the benchmark suite
    .venv/bin/python bench/bench_large.py --seeds 2
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOMAINS = ("course", "meal", "travel", "shopping", "workforce", "pc_build")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    from pipeline.generation.build import generate_task
    from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey

    settings = GenerationSettings(crosscheck=False)
    print("== Large grids (one core, CP-SAT certificate, no cross-check; six domains)")
    for rows, cols, hidden, budget in (
        (5, 7, 21, 25),
        (10, 10, 60, 30),
        (15, 15, 150, 30),
        (20, 20, 300, 30),
    ):
        times = []
        for domain in DOMAINS:
            for seed in range(args.seeds):
                start = time.perf_counter()
                generate_task(
                    TaskKey(domain, rows, cols, hidden, budget, max(25, budget + 2), seed, 0), settings
                )
                times.append(time.perf_counter() - start)
        print(
            f"  {rows}x{cols} H={hidden:3d} B={budget}: median {statistics.median(times):.3f}s, "
            f"max {max(times):.3f}s over {len(times)} tasks"
        )
    start = time.perf_counter()
    try:
        generate_task(TaskKey("course", 10, 10, 60, 120, 122, 0, 0), settings)
        print(f"  10x10 H=60 B=120: certified in {time.perf_counter() - start:.2f}s")
    except GenerationError as error:
        reason = str(error).split("(last reason: ")[-1].split(")")[0]
        print(f"  10x10 H=60 B=120: not certifiable ({reason}; {time.perf_counter() - start:.1f}s)")
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "pipeline.release",
            "grid=20x20",
            "grid.hidden_slots=[300]",
            "grid.decoy_budgets=[30]",
            "release.tasks_per_cell=3",
            "release.workers=1",
            "release.crosscheck=false",
            "release.domains=[course]",
            f"release.output_root={folder}",
            f"release.cells_root={folder}/cells",
            f"hydra.run.dir={folder}/h",
        ]
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        seconds = time.perf_counter() - start
        print(f"  3-task 20x20 H=300 B=30 release command, start-up included: {seconds:.1f}s wall")


if __name__ == "__main__":
    main()
