"""Generation and certification benchmark. Prints numbers; never fails on speed.

make bench                 # full: 324 paper-grid tasks, integrity audit, MILP cost,
                           # resistance at min_resistant_share 0 / 0.3 / 0.6, 10x10 tasks
make bench ARGS=--quick    # a smaller run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from domains import PAPER_DOMAINS  # noqa: E402
from pipeline.generation import GenerationSettings, TaskKey, generate_task  # noqa: E402
from pipeline.integrity import classifier_score, decoy_cells, policy_scores  # noqa: E402
from solvers.milp import crosscheck_answer  # noqa: E402
from solvers.results import SolverSettings  # noqa: E402

HIDDEN = (1, 5, 7, 11, 15, 21)
BUDGETS = (0, 2, 4, 8, 10, 15, 19, 21, 25)


def paper_keys(quick: bool) -> list[TaskKey]:
    hidden = HIDDEN[::2] if quick else HIDDEN
    budgets = BUDGETS[::3] if quick else BUDGETS
    return [TaskKey(d, 5, 7, h, b, max(25, b + 2)) for d in PAPER_DOMAINS for h in hidden for b in budgets]


def run_one(args: tuple[TaskKey, int, float]) -> dict:
    key, workers, resistant = args
    start = time.perf_counter()
    made = generate_task(key, GenerationSettings(solver_workers=workers, min_resistant_share=resistant))
    wall = (time.perf_counter() - start) * 1000.0
    certificate, measures = made.answer.certificate, made.answer.measures
    return {
        "key": key,
        "wall_ms": wall,
        **made.timings,
        "rounds": certificate.repair_rounds,
        "tightenings": certificate.tightenings,
        "attempt": certificate.attempt,
        "shallow": measures.shallow_decoys,
        "dfs_nodes": measures.dfs_nodes,
        "propagation": measures.propagation,
        "distance": measures.distance_to_ambiguity.units,
        "made": made,
    }


def run_batch(
    keys: list[TaskKey], processes: int, workers: int, resistant: float = 0.0
) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    jobs = [(k, workers, resistant) for k in keys]
    if processes == 1:
        rows = [run_one(job) for job in jobs]
    else:
        with get_context("spawn").Pool(processes) as pool:
            rows = pool.map(run_one, jobs, chunksize=4)
    return time.perf_counter() - start, rows


def describe(label: str, seconds: float, rows: list[dict]) -> dict:
    walls = [r["wall_ms"] for r in rows]
    summary = {
        "label": label,
        "tasks": len(rows),
        "total_s": round(seconds, 2),
        "median_ms": round(statistics.median(walls), 1),
        "max_ms": round(max(walls), 1),
        "unique_before_repair": sum(r["rounds"] == 0 and r["attempt"] == 0 for r in rows),
        "repair_rounds": sum(r["rounds"] for r in rows),
        "max_rounds": max(r["rounds"] for r in rows),
        "tightenings": sum(r["tightenings"] for r in rows),
        "whole_task_redraws": sum(r["attempt"] for r in rows),
        "tasks_redrawn": sum(r["attempt"] > 0 for r in rows),
    }
    print(
        f"{label:38s} tasks={summary['tasks']:4d} total={summary['total_s']:7.2f}s "
        f"median={summary['median_ms']:7.1f}ms max={summary['max_ms']:8.1f}ms "
        f"unique-before-repair={summary['unique_before_repair']} "
        f"rounds={summary['repair_rounds']} (max {summary['max_rounds']}) "
        f"tighten={summary['tightenings']} task-redraws={summary['whole_task_redraws']} "
        f"(in {summary['tasks_redrawn']} tasks)"
    )
    return summary


def propagation(label: str, rows: list[dict]) -> dict:
    records = [r["propagation"] for r in rows]
    decoys = sum(p.decoys for p in records) or 1
    with_decoys = [p for p in records if p.decoys]
    out = {
        "one_round": sum(p.one_round for p in records) / decoys,
        "fixpoint": sum(p.fixpoint for p in records) / decoys,
        "decided": sum(p.decided for p in with_decoys),
        "tasks_with_decoys": len(with_decoys),
    }
    print(
        f"{label:38s} decoys eliminated by one round {out['one_round']:.1%}, at the fixpoint "
        f"{out['fixpoint']:.1%}; tasks decided by propagation {out['decided']}/"
        f"{out['tasks_with_decoys']}"
    )
    return out


def integrity(rows: list[dict], splits: int) -> dict:
    shallow = sum(r["shallow"] for r in rows if r["key"].hidden_slots >= 2)
    decoys = sum(r["key"].decoy_budget for r in rows if r["key"].hidden_slots >= 2)
    distances = Counter("none" if r["distance"] is None else min(r["distance"], 10) for r in rows)
    print(f"shallow decoys (H>=2): {shallow}/{decoys} = {shallow / max(decoys, 1):.1%}")
    print(
        "distance to ambiguity (units, 10 = 10+):", dict(sorted(distances.items(), key=lambda kv: str(kv[0])))
    )
    cells = [c for r in rows for c in decoy_cells(r["made"].task, r["made"].answer)]
    out: dict = {"shallow_share": shallow / max(decoys, 1), "policies": policy_scores(cells)}
    print(f"audit over {len(cells)} decoy cells (chance {out['policies']['first_listed']['chance']:.3f}):")
    for name, score in out["policies"].items():
        print(f"  policy {name:28s} {score['accuracy']:.3f} [{score['low']:.3f}, {score['high']:.3f}]")
    for features in ("candidate_side", "readable"):
        for model in ("logistic_regression", "gradient_boosting"):
            score = classifier_score(cells, features, model, splits=splits)
            out[f"{features}_{model}"] = score
            print(
                f"  classifier ({features}) {model:20s} {score['accuracy']:.3f} "
                f"[{score['low']:.3f}, {score['high']:.3f}] chance {score['chance']:.3f}"
            )
    return out


def crosscheck_cost(rows: list[dict]) -> dict:
    out = {}
    for milp in ("highs", "cbc"):
        times, failures = [], 0
        start = time.perf_counter()
        for r in rows:
            made = r["made"]
            one = time.perf_counter()
            record = crosscheck_answer(made.task, made.answer, SolverSettings(), milp)
            times.append((time.perf_counter() - one) * 1000.0)
            failures += not record.ok
        total = time.perf_counter() - start
        print(
            f"{milp} cross-check: {len(rows)} tasks total={total:.2f}s "
            f"median={statistics.median(times):.1f}ms max={max(times):.1f}ms "
            f"disagreements={failures}"
        )
        out[milp] = {"total_s": total, "median_ms": statistics.median(times), "failures": failures}
    return out


def large(count: int) -> list[dict]:
    """10x10, H = 60, B = 30: the largest budget certified in every domain on this grid."""
    from pipeline.generation.keys import GenerationError

    out = []
    for domain in PAPER_DOMAINS[:count]:
        try:
            row = run_one((TaskKey(domain, 10, 10, 60, 30, 25), 1, 0.0))
        except GenerationError as error:
            print(f"10x10 H=60 B=30 {domain:10s} not certified: {str(error)[:120]}")
            out.append({"domain": domain, "seconds": None})
            continue
        print(
            f"10x10 H=60 B=30 {domain:10s} {row['wall_ms'] / 1000:6.2f}s "
            f"(generate {row['generate_ms']:.0f} ms, certify {row['certify_ms']:.0f} ms, "
            f"measures {row['measures_ms']:.0f} ms) rounds={row['rounds']} "
            f"attempts={row['attempt'] + 1} dfs_nodes={row['dfs_nodes']}"
        )
        out.append({"domain": domain, "seconds": row["wall_ms"] / 1000})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer tasks")
    parser.add_argument("--out", default="outputs/bench/generate.json")
    args = parser.parse_args()
    keys = paper_keys(args.quick)
    report: dict = {}
    print(f"== paper grid 5x7: {len(keys)} tasks (6 domains x H x B)")
    seconds, rows = run_batch(keys, 1, 1)
    report["serial_1_worker"] = describe("1 process, 1 CP-SAT worker", seconds, rows)
    seconds, rows2 = run_batch(keys, 2, 1)
    report["parallel_2_processes"] = describe("2 processes, 1 CP-SAT worker each", seconds, rows2)
    seconds, rows3 = run_batch(keys, 1, 2)
    report["serial_2_workers"] = describe("1 process, 2 CP-SAT workers", seconds, rows3)
    report["propagation"] = {"0": propagation("min_resistant_share=0", rows)}
    report["crosscheck"] = crosscheck_cost(rows)
    if not args.quick:
        for share in (0.3, 0.6):
            seconds, rows_r = run_batch(keys, 2, 1, share)
            report[f"resistant_{share}"] = describe(
                f"min_resistant_share={share}, 2 processes", seconds, rows_r
            )
            report["propagation"][str(share)] = propagation(f"min_resistant_share={share}", rows_r)
        more = [
            TaskKey(k.domain, k.rows, k.cols, k.hidden_slots, k.decoy_budget, k.candidates_per_slot, seed)
            for seed in (1, 2)
            for k in keys
        ]
        rows = rows + run_batch(more, 2, 1)[1]
    report["integrity"] = integrity(rows, 4 if args.quick else 20)
    print("== large tasks")
    report["large"] = large(2 if args.quick else len(PAPER_DOMAINS))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(f"report written to {args.out}")


if __name__ == "__main__":
    main()
