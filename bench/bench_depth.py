"""Difficulty that rises with B: per grid preset, the reasoning depth of generated tasks by B
(and H), seconds per task, and the share of tasks that need more than propagation to the
fixpoint (probing or search), with Wilson 95% intervals.

    python bench/bench_depth.py                       # every preset, 2 seeds (six domains)
    python bench/bench_depth.py --presets 10x10 --seeds 3
    python bench/bench_depth.py --quick               # 5x7 and 10x10, 2 seeds

With two seeds or more it also audits each preset's tasks: the rule-free policies, and the
transfer classifiers trained on seed 0's tasks and tested on the other seeds'.

Generation settings may be given as name=value (``cage_spread=2.0 cage_cells=3``).
Prints numbers; never fails on a figure.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from domains import PAPER_DOMAINS  # noqa: E402
from pipeline.generation.keys import GenerationSettings, TaskKey  # noqa: E402
from solvers.ladder import FIXPOINT, RUNGS  # noqa: E402

PRESETS = {  # rows, cols, H list, B list, K, room over budget
    "5x5": (5, 5, [5, 7, 11, 15], [0, 2, 4, 8, 10, 15, 19], 25, 2),
    "5x7": (5, 7, [5, 7, 11, 15, 21], [0, 2, 4, 8, 10, 15, 19, 21, 25], 25, 2),
    "5x10": (5, 10, [5, 7, 11, 15, 19, 21, 25], [0, 2, 4, 8, 10, 15, 19, 21, 25, 30], 35, 2),
    "10x10": (10, 10, [10, 30, 60], [0, 10, 30, 60, 120], 25, None),
    "15x15": (15, 15, [25, 75, 150], [0, 30, 100, 300], 25, None),
    "20x20": (20, 20, [50, 150, 300], [0, 30, 150, 600], 25, None),
}


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The Wilson 95% interval of hits / n."""
    if n == 0:
        return (float("nan"), float("nan"))
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def one(job: tuple[TaskKey, GenerationSettings]) -> tuple[TaskKey, float, int, object]:
    from pipeline.generation.build import generate_task

    key, settings = job
    start = time.perf_counter()
    made = generate_task(key, settings)
    seconds = time.perf_counter() - start
    measures = made.answer.measures
    depth = getattr(measures, "depth", None)  # None on code before the ladder (a before run)
    return key, seconds, depth.rung if depth else -1, (made.task, made.answer)


def run_preset(name: str, seeds: int, settings: GenerationSettings, workers: int, min_h: int) -> None:
    rows, cols, hiddens, budgets, k, room = PRESETS[name]
    jobs = []
    for hidden in [h for h in hiddens if h >= min_h]:
        for budget in budgets:
            candidates = k if room is None else max(k, budget + room)
            for domain in PAPER_DOMAINS:
                for seed in range(seeds):
                    jobs.append((TaskKey(domain, rows, cols, hidden, budget, candidates, seed, 0), settings))
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(one, jobs, chunksize=1))
    wall = time.perf_counter() - start
    seconds = sorted(s for _, s, _, _ in results)
    print(
        f"\n== {name}: {len(results)} tasks in {wall:.0f}s wall ({workers} processes); per task median "
        f"{statistics.median(seconds):.2f}s, p90 {seconds[int(0.9 * (len(seconds) - 1))]:.2f}s, "
        f"max {seconds[-1]:.2f}s"
    )
    print(
        f"{'B':>5} {'n':>4} {'beyond fixpoint':>16} {'95% interval':>16}   depth counts   (median s, p90 s)"
    )
    for budget in budgets:
        part = [(s, r) for key, s, r, _ in results if key.decoy_budget == budget]
        beyond = sum(r > FIXPOINT for _, r in part)
        low, high = wilson(beyond, len(part))
        counts = Counter(RUNGS[r] for _, r in part)
        times = sorted(s for s, _ in part)
        print(
            f"{budget:>5} {len(part):>4} {beyond / len(part):>16.2f}   [{low:.2f}, {high:.2f}]   "
            f"{dict(sorted(counts.items(), key=lambda kv: RUNGS.index(kv[0])))}   "
            f"({statistics.median(times):.2f}, {times[int(0.9 * (len(times) - 1))]:.2f})"
        )
    for hidden in [h for h in hiddens if h >= min_h]:
        line = []
        for budget in budgets:
            part = [r for key, _, r, _ in results if (key.decoy_budget, key.hidden_slots) == (budget, hidden)]
            line.append(f"{sum(r > FIXPOINT for r in part)}/{len(part)}")
        print(f"  H={hidden:<4} beyond fixpoint by B: " + "  ".join(line))
    if seeds > 1:
        audit_lift(name, results)


def audit_lift(name: str, results: list) -> None:
    """The integrity audit of the preset's tasks: rule-free policies on seeds >= 1 and the
    transfer classifiers trained on seed 0's tasks, tested on the others; the worst lift."""
    from pipeline.integrity import RULE_READING_POLICIES, audit

    trained = [pair for key, _, _, pair in results if key.seed == 0]
    tested = [pair for key, _, _, pair in results if key.seed > 0]
    report = audit(tested, splits=0, companion=trained)
    readers = {n: s for n, s in report["policies"].items() if n not in RULE_READING_POLICIES}
    readers.update({f"transfer {n}": s for n, s in report.get("transfer", {}).items()})
    worst = max(readers, key=lambda n: readers[n]["accuracy"] - readers[n]["chance"])
    score = readers[worst]
    print(
        f"  audit ({report['decoy_cells']} decoy cells, chance {report['chance']:.3f}): worst rule-free "
        f"lift {score['accuracy'] - score['chance']:+.3f} ({worst}, {score['accuracy']:.3f} "
        f"[{score['low']:.3f}, {score['high']:.3f}]); failures: {report['failures'] or 'none'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="5x5,5x7,5x10,10x10,15x15,20x20")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("settings", nargs="*", help="generation settings as name=value")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    values = {}
    for item in args.settings:
        key, _, value = item.partition("=")
        default = getattr(GenerationSettings(), key)
        values[key] = type(default)(value) if not isinstance(default, bool) else value == "true"
    settings = GenerationSettings(**values)
    presets = ["5x7", "10x10"] if args.quick else args.presets.split(",")
    print(f"generation settings: {values or 'defaults'}; seeds {args.seeds}; six domains; H >= 5")
    for name in presets:
        run_preset(name, args.seeds, settings, args.workers, 5)


if __name__ == "__main__":
    main()
