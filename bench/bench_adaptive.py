"""The adaptive source (gridbench.AdaptiveSource): certified tasks per second per core at each
rung of the default ladder, and how long a trainer waits in ``next()`` at the hardest rung
(5x7, H = 21, B = 25, min_depth = probing) with and without the prefetch pool.

    python bench/bench_adaptive.py [--tasks 8] [--steps 16] [--play 0.5] [--waits-only]

Throughput is CPU time (``time.process_time`` in the process that generates), so another job
on the machine changes it little; waits are wall time, measured while a simulated trainer
"plays" each task for ``--play`` seconds (a rollout of a model takes longer than that).
Prints numbers; never fails on speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from gridbench.adaptive import AdaptiveSource, default_ladder
from gridbench.adaptive.tasks import Job, make_task
from pipeline.generation import GenerationSettings

DOMAINS = ("course", "meal", "pc_build", "shopping", "travel", "workforce")


def throughput(tasks: int) -> None:
    print(f"certified tasks per CPU second, {tasks} tasks per rung (six domains; CP-SAT proof, no MILP)")
    print("| rung | difficulty | CPU s per task: mean / median / max | tasks per s per core |")
    print("|---|---|---|---|")
    make_task(Job(0, "", 0, 0, default_ladder()[0], DOMAINS, 25, 2, GenerationSettings()))  # warm up
    for level, rung in enumerate(default_ladder()):
        cpu = []
        for k in range(tasks):
            job = Job(0, "", level, k, rung, DOMAINS, 25, 2, GenerationSettings())
            start = time.process_time()
            make_task(job)
            cpu.append(time.process_time() - start)
        mean = statistics.mean(cpu)
        print(
            f"| {level} | {rung.name} | {mean:.3f} / {statistics.median(cpu):.3f} / {max(cpu):.3f} "
            f"| {1 / mean:.1f} |"
        )


def trainer_waits(workers: int, steps: int, play: float) -> tuple[float, float, list[float]]:
    """(first wait, mean wait after it, every wait) of a trainer at the hardest rung."""
    top = len(default_ladder()) - 1
    source = AdaptiveSource(DOMAINS, seed=1, start=top, window=10**5, workers=workers, prefetch=4)
    waits = []
    try:
        for _ in range(steps):
            start = time.perf_counter()
            item = source.next()
            waits.append(time.perf_counter() - start)
            time.sleep(play)  # the rollout
            source.report(item, 1.0)
    finally:
        source.close()
    return waits[0], statistics.mean(waits[1:]), waits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--play", type=float, default=0.5)
    parser.add_argument("--waits-only", action="store_true", help="skip the throughput table")
    args, _ = parser.parse_known_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if not args.waits_only:
        throughput(args.tasks)
    print(f"\ntrainer wait in next() at the hardest rung ({default_ladder()[-1].name}), ")
    print(f"{args.steps} tasks, {args.play} s of play each")
    print("| prefetch | first next() s | mean wait after it s | max after it s |")
    print("|---|---|---|---|")
    for workers in (0, 1, 2):
        first, mean, waits = trainer_waits(workers, args.steps, args.play)
        label = "none (workers=0)" if workers == 0 else f"workers={workers}, prefetch=4"
        print(f"| {label} | {first:.3f} | {mean:.4f} | {max(waits[1:]):.3f} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
