"""Large grids and large decoy budgets (issues 12 and 17): per-task medians on one core for
four sizes at their largest budgets (K = 25; 5x7 as in docs/spec.md, section 4 "Configurations
to ship": K = B + 2), the construction without cages on one large key (not certifiable), and
the 20x20 release commands (start-up included).

    make bench                             # part of the benchmark suite
    .venv/bin/python bench/bench_large.py --seeds 3
    .venv/bin/python bench/bench_large.py --quick   # one seed, no release commands
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
SIZES = ((5, 7, 21, 25, 27), (10, 10, 60, 120, 25), (15, 15, 150, 300, 25), (20, 20, 300, 600, 25))
# per task on one core, course, K = 25, as the issue measured them on the code before issue 5
ISSUE_BEFORE = {"5x7": "0.06 s", "10x10": "0.7-2.0 s", "15x15": "7-8 s", "20x20": "20-33 s"}


def per_task(seeds: int) -> None:
    from pipeline.generation.build import generate_task
    from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey

    settings = GenerationSettings(crosscheck=False)
    print("== Per task, one core (CP-SAT certificate and measures, no cross-check; six domains)")
    for rows, cols, hidden, budget, candidates in SIZES:
        times, parts, failed = [], {"generate_ms": [], "certify_ms": [], "measures_ms": []}, 0
        for domain in DOMAINS:
            for seed in range(seeds):
                start = time.perf_counter()
                try:
                    made = generate_task(
                        TaskKey(domain, rows, cols, hidden, budget, candidates, seed, 0), settings
                    )
                except GenerationError:
                    failed += 1
                    continue
                times.append(time.perf_counter() - start)
                for name, values in parts.items():
                    values.append(made.timings.get(name, 0.0) / 1000.0)
        size = f"{rows}x{cols}"
        medians = ", ".join(f"{k[:-3]} {statistics.median(v):.2f}s" for k, v in parts.items() if v)
        print(
            f"  {size:5s} H={hidden:3d} B={budget:3d}: median {statistics.median(times):.2f}s, "
            f"p90 {sorted(times)[int(0.9 * (len(times) - 1))]:.2f}s, max {max(times):.2f}s over "
            f"{len(times)} tasks, {failed} not certifiable ({medians}); issue's before: {ISSUE_BEFORE[size]}"
        )


def before(budget_seconds: float) -> None:
    """The construction without cages on 10x10 H=60 B=120 (cage_bits very high)."""
    from pipeline.generation.build import generate_task
    from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey

    settings = GenerationSettings(crosscheck=False, cage_bits=10_000.0, max_attempts=2)
    start = time.perf_counter()
    try:
        generate_task(TaskKey("course", 10, 10, 60, 120, 25, 0, 0), settings)
        print(f"  without cages, course 10x10 B=120: certified in {time.perf_counter() - start:.1f}s")
    except GenerationError as error:
        reason = str(error).split("(last reason: ")[-1].split(")")[0]
        print(
            f"  without cages, course 10x10 B=120: not certifiable after 2 draws "
            f"({reason}; {time.perf_counter() - start:.1f}s; budget {budget_seconds:.0f}s)"
        )


def release_command(domains: list[str] | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "gridbench.commands.release",
            "grid=20x20",
            "grid.hidden_slots=[300]",
            "grid.decoy_budgets=[600]",
            "release.tasks_per_cell=3",
            "release.workers=1",
            "release.crosscheck=false",
            f"release.output_root={folder}",
            f"release.cache_root={folder}/cells",
            f"hydra.run.dir={folder}/h",
        ]
        if domains:
            command.append(f"release.domains=[{','.join(domains)}]")
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        seconds = time.perf_counter() - start
        count = 3 * (len(domains) if domains else len(DOMAINS))
        which = ",".join(domains) if domains else "six domains"
        print(
            f"  20x20 H=300 B=600 release, tasks_per_cell=3, {which} ({count} tasks), one worker, "
            f"start-up included: {seconds:.1f}s wall ({seconds / count:.2f}s a task)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    per_task(1 if args.quick else args.seeds)
    before(60.0)
    if not args.quick:
        print("== The issue's release command")
        release_command(["course"])
        release_command(None)


if __name__ == "__main__":
    main()
