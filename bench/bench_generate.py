"""Generation and certification benchmark (issue 2). Prints numbers; never fails on speed.

    make bench                 # full: 324 paper-grid tasks, CBC cost, 10x10 H=60 B=120
    make bench ARGS=--quick    # a smaller run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from domains import PAPER_DOMAINS  # noqa: E402
from pipeline import GenerationSettings, TaskKey, crosscheck_answer, generate_task  # noqa: E402
from pipeline.audit import audit_task  # noqa: E402
from solvers.results import SolverSettings  # noqa: E402

HIDDEN = (1, 5, 7, 11, 15, 21)
BUDGETS = (0, 2, 4, 8, 10, 15, 19, 21, 25)


def paper_keys(quick: bool) -> list[TaskKey]:
    hidden = HIDDEN[::2] if quick else HIDDEN
    budgets = BUDGETS[::3] if quick else BUDGETS
    return [TaskKey(d, 5, 7, h, b, max(25, b + 2)) for d in PAPER_DOMAINS for h in hidden
            for b in budgets]  # fmt: skip


def run_one(args: tuple[TaskKey, int]) -> dict:
    key, workers = args
    start = time.perf_counter()
    made = generate_task(key, GenerationSettings(solver_workers=workers))
    wall = (time.perf_counter() - start) * 1000.0
    certificate, measures = made.answer.certificate, made.answer.measures
    return {"key": key, "wall_ms": wall, **made.timings,
            "rounds": certificate["repair_rounds"], "redraws": certificate["redraws"],
            "tightenings": certificate["tightenings"], "attempt": certificate["attempt"],
            "shallow": measures["shallow_decoys"], "dfs_nodes": measures["dfs_nodes"],
            "distance": measures["distance_to_ambiguity"]["units"],
            "audit": audit_task(made.task, made.answer), "made": made}  # fmt: skip


def run_batch(keys: list[TaskKey], processes: int, workers: int) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    if processes == 1:
        rows = [run_one((k, workers)) for k in keys]
    else:
        with get_context("spawn").Pool(processes) as pool:
            rows = pool.map(run_one, [(k, workers) for k in keys], chunksize=4)
    return time.perf_counter() - start, rows


def describe(label: str, seconds: float, rows: list[dict]) -> dict:
    walls = [r["wall_ms"] for r in rows]
    summary = {"label": label, "tasks": len(rows), "total_s": round(seconds, 2),
               "median_ms": round(statistics.median(walls), 1), "max_ms": round(max(walls), 1),
               "repair_rounds": sum(r["rounds"] for r in rows),
               "max_rounds": max(r["rounds"] for r in rows),
               "redraws": sum(r["redraws"] for r in rows),
               "tightenings": sum(r["tightenings"] for r in rows),
               "whole_task_redraws": sum(r["attempt"] for r in rows)}  # fmt: skip
    print(f"{label:38s} tasks={summary['tasks']:4d} total={summary['total_s']:7.2f}s "
          f"median={summary['median_ms']:7.1f}ms max={summary['max_ms']:8.1f}ms "
          f"rounds={summary['repair_rounds']} (max {summary['max_rounds']}) "
          f"redraws={summary['redraws']} tighten={summary['tightenings']} "
          f"task-redraws={summary['whole_task_redraws']}")
    return summary


def integrity(rows: list[dict]) -> dict:
    shallow = sum(r["shallow"] for r in rows if r["key"].hidden_slots >= 2)
    decoys = sum(r["key"].decoy_budget for r in rows if r["key"].hidden_slots >= 2)
    distances = Counter("none" if r["distance"] is None else min(r["distance"], 10)
                        for r in rows)  # fmt: skip
    cells, chance, hits = 0, 0.0, defaultdict(int)
    for r in rows:
        cells += r["audit"]["decoy_cells"]
        chance += r["audit"]["chance"]
        for name, value in r["audit"]["hits"].items():
            hits[name] += value
    print(f"shallow decoys (H>=2): {shallow}/{decoys} = {shallow / max(decoys, 1):.1%}")
    print("distance to ambiguity (units, 10 = 10+):",
          dict(sorted(distances.items(), key=lambda kv: str(kv[0]))))
    print(f"shortcut audit over {cells} decoy cells, chance = {chance / max(cells, 1):.3f}:")
    generic = {k: v for k, v in hits.items() if not k.startswith(("largest_", "smallest_"))
               or k in ("smallest_id", "smallest_name", "largest_slot_margin")}  # fmt: skip
    for name, value in sorted(generic.items()):
        print(f"  {name:24s} {value / cells:.3f}")
    attribute_rates = [(name, value) for name, value in hits.items() if name not in generic]
    per_domain = defaultdict(int)
    for r in rows:
        for name in r["audit"]["hits"]:
            if name not in generic:
                per_domain[name] += r["audit"]["decoy_cells"]
    rates = sorted((value / per_domain[name], name) for name, value in attribute_rates)
    print(f"  attribute policies: lowest {rates[0][1]}={rates[0][0]:.3f}, "
          f"highest {rates[-1][1]}={rates[-1][0]:.3f} ({len(rates)} policies)")
    return {"shallow_share": shallow / max(decoys, 1), "chance": chance / max(cells, 1),
            "hits": {k: v / cells for k, v in generic.items()},
            "attribute_range": [rates[0][0], rates[-1][0]]}  # fmt: skip


def crosscheck_cost(rows: list[dict]) -> dict:
    times, failures = [], 0
    start = time.perf_counter()
    for r in rows:
        made = r["made"]
        record = crosscheck_answer(made.task, made.answer, SolverSettings())
        times.append(record["wall_ms"])
        failures += not record["ok"]
    total = time.perf_counter() - start
    print(f"CBC cross-check: {len(rows)} tasks total={total:.2f}s "
          f"median={statistics.median(times):.1f}ms max={max(times):.1f}ms failures={failures}")
    return {"total_s": total, "median_ms": statistics.median(times), "failures": failures}


def large(count: int) -> list[dict]:
    out = []
    for domain in PAPER_DOMAINS[:count]:
        row = run_one((TaskKey(domain, 10, 10, 60, 120, 25), 1))
        print(f"10x10 H=60 B=120 {domain:10s} {row['wall_ms'] / 1000:6.2f}s "
              f"(generate {row['generate_ms']:.0f} ms, certify {row['certify_ms']:.0f} ms, "
              f"measures {row['measures_ms']:.0f} ms) rounds={row['rounds']} "
              f"redraws={row['redraws']} dfs_nodes={row['dfs_nodes']}")
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
    report["integrity"] = integrity(rows)
    report["crosscheck"] = crosscheck_cost(rows)
    print("== large tasks")
    report["large"] = large(2 if args.quick else len(PAPER_DOMAINS))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(f"report written to {args.out}")


if __name__ == "__main__":
    main()
