"""Every preset at every seed (issue 26): each preset's hardest cells generated over many
seeds and all six domains; the share of keys that fail to certify (with its Wilson interval),
the attempts they took, and seconds per task.

    python bench/bench_seeds.py                           # 5x7 and 10x10, 20 seeds
    python bench/bench_seeds.py --presets all --seeds 20  # every preset
    python bench/bench_seeds.py --presets 5x10 --first-seed 100

Prints numbers; never fails on a figure. Uses only the generation API, so the same script
measures an older checkout (run it from there).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DOMAINS = ("course", "meal", "pc_build", "shopping", "travel", "workforce")
HARDEST = {  # rows, cols, K, room over budget, [(H, B), ...]: the largest B at the largest H, and the
    # cells the issue saw fail (5x10 H=15 B=30, 10x10 H=60 B=30: the largest B without cages)
    "5x5": (5, 5, 25, 2, [(15, 19), (11, 19)]),
    "5x7": (5, 7, 25, 2, [(21, 25), (15, 25)]),
    "5x10": (5, 10, 35, 2, [(25, 30), (15, 30)]),
    "10x10": (10, 10, 25, None, [(60, 120), (60, 30)]),
    "15x15": (15, 15, 25, None, [(150, 300), (150, 30)]),
    "20x20": (20, 20, 25, None, [(300, 600), (300, 30)]),
}


def one(job: tuple) -> tuple:
    from pipeline.generation.build import generate_task
    from pipeline.generation.keys import GenerationSettings, TaskKey

    preset, domain, hidden, budget, seed = job
    rows, cols, k, room, _ = HARDEST[preset]
    candidates = k if room is None else max(k, budget + room)
    start = time.perf_counter()
    try:
        made = generate_task(
            TaskKey(domain, rows, cols, hidden, budget, candidates, seed, 0), GenerationSettings()
        )
    except Exception as error:  # GenerationError, or anything else: a failure to count
        return job, False, time.perf_counter() - start, str(error)[:160], -1
    return job, True, time.perf_counter() - start, "", made.answer.certificate.attempt


def wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="5x7,10x10")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    presets = list(HARDEST) if args.presets == "all" else args.presets.split(",")
    for preset in presets:
        cells = HARDEST[preset][4]
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        jobs = [(preset, d, h, b, s) for h, b in cells for d in DOMAINS for s in seeds]
        start = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(one, jobs, chunksize=1))
        print(
            f"\n== {preset}: {len(jobs)} keys in {time.perf_counter() - start:.0f}s "
            f"({args.workers} processes)"
        )
        for hidden, budget in cells:
            part = [r for r in results if (r[0][2], r[0][3]) == (hidden, budget)]
            failed = [r for r in part if not r[1]]
            low, high = wilson(len(failed), len(part))
            times = sorted(r[2] for r in part)
            redrawn = sum(1 for r in part if r[1] and r[4] > 0)
            print(
                f"  H={hidden} B={budget}: {len(failed)}/{len(part)} failed ({len(failed) / len(part):.3f}, "
                f"95% [{low:.3f}, {high:.3f}]); {redrawn} needed a re-draw; seconds per key median "
                f"{statistics.median(times):.2f}, p90 {times[int(0.9 * (len(times) - 1))]:.2f}, "
                f"max {times[-1]:.2f}"
            )
            for job, _, _, reason, _ in failed[:5]:
                print(f"    {job[1]} seed {job[4]}: {reason}")


if __name__ == "__main__":
    main()
