"""The Python API and the data files: create_dataset throughput (tasks per second on one
core, 5x7 and 10x10), load_release time and memory on the default release, and the size of
the Parquet tables against the JSON files.

    make bench                       # part of the benchmark suite
    .venv/bin/python bench/bench_api.py --tasks 60
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RELEASE = ROOT / "outputs" / "releases" / "gridbench-v2.0.0"


def throughput(tasks: int) -> None:
    import gridbench

    # 10x10: B up to 30, the largest budget the generator certifies there (see the README)
    for grid, hidden, budgets in (
        ("5x7", range(1, 22), range(0, 26)),
        ("10x10", range(10, 61), range(0, 31)),
    ):
        dataset = gridbench.create_dataset(
            size=tasks, seed=11, grid=grid, hidden_slots=hidden, decoy_budgets=budgets
        )
        start, cpu = time.perf_counter(), time.process_time()
        made = [item for item in dataset]
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        certified = sum(item.answer["certificate"]["ok"] for item in made)
        redraws = sum(item.redraws for item in made)
        print(
            f"create_dataset {grid:5s}: {tasks} tasks (H in {hidden.start}..{hidden.stop - 1}, "
            f"B in {budgets.start}..{budgets.stop - 1}, six domains) in {seconds:.1f}s = "
            f"{tasks / cpu:.1f} tasks/s per core ({1000 * cpu / tasks:.0f} ms CPU each), "
            f"{certified}/{tasks} certified, {redraws} (domain, H, B) draws replaced"
        )


LOAD = """
import sys, time
sys.path.insert(0, {root!r})
def rss(field):  # kB of VmRSS / VmHWM: ru_maxrss would carry the parent's peak across exec
    line = next(l for l in open("/proc/self/status") if l.startswith(field))
    return int(line.split()[1])
before = rss("VmRSS")
start = time.perf_counter()
import gridbench
release = gridbench.load_release({release!r})
opened = time.perf_counter() - start
tasks = [record.task for record in release]
answers = [record.answer for record in release]
everything = time.perf_counter() - start
peak = rss("VmHWM")
print(len(release), opened, everything, before / 1024, peak / 1024)
"""


def load() -> None:
    if not (RELEASE / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "gridbench.commands.release"], cwd=ROOT, check=True, capture_output=True
        )
    out = subprocess.run(
        [sys.executable, "-c", LOAD.format(root=str(ROOT), release=str(RELEASE))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    count, opened, everything, before, peak = int(out[0]), *map(float, out[1:])
    print(
        f"load_release (default release, {count} tasks): opened in {opened * 1000:.0f} ms "
        f"(import included); every task and answer read in {everything:.2f}s; peak RSS "
        f"{peak:.0f} MB ({before:.0f} MB before import)"
    )
    json_bytes = sum(
        p.stat().st_size for kind in ("tasks", "answers") for p in (RELEASE / kind).rglob("*.json")
    )
    tables = sum(p.stat().st_size for p in (RELEASE / "data").rglob("*.parquet"))
    print(
        f"data size: JSON files {json_bytes / 1e6:.1f} MB, Parquet tables {tables / 1e6:.2f} MB "
        f"({json_bytes / max(tables, 1):.1f}x smaller)"
    )
    start = time.perf_counter()
    import polars as pl

    rows = sum(pl.read_parquet(p).height for p in (RELEASE / "data" / "tasks").glob("*.parquet"))
    print(f"polars reads the {rows} task rows in {(time.perf_counter() - start) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=60, help="tasks per grid for create_dataset")
    args = parser.parse_args()
    print("== Python API and data files")
    throughput(args.tasks)
    load()


if __name__ == "__main__":
    main()
