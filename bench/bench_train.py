"""The sharded training-set build (`make train`): wall time, peak RSS, bytes on disk and
tasks per second for SIZE tasks on this machine, `verify` of the result, and the projection of
the 100,000-task preset on N nodes from the measured cost per task.

    make bench                                   # part of the benchmark suite (10,000 tasks)
    .venv/bin/python bench/bench_train.py --size 2000
    make bench ARGS=--quick                      # 1,000 tasks
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and the peak RSS (MB) of the largest process of this command alone (the
    command and the workers it waited for: ``wait4``'s usage)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command[2:4])} failed: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    return seconds, usage.ru_maxrss / 1024.0


def disk_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def sampling_shard_size(size: int) -> int:
    """The shard size that samples a training set of ``size`` tasks as the full build would: a
    shard is one of the four parts (shard k: part k mod 4, 5x5 to 10x10), so shards of a
    quarter of the size (1,000 at most, the default) give every part its share (one shard of
    1,000 was all 5x5, the cheapest part)."""
    return max(1, min(1000, size // 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="1,000 tasks")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    if args.quick:
        args.size = 1000
    shard = sampling_shard_size(args.size)
    with tempfile.TemporaryDirectory() as folder:
        name = f"bench-train-{args.size}"
        seconds, peak = run(
            [
                sys.executable,
                "-m",
                "gridbench.commands.train",
                f"size={args.size}",
                f"shard_size={shard}",
                f"name={name}",
                f"workers={args.workers}",
                f"output_root={folder}",
                f"hydra.run.dir={folder}/h",
            ]
        )
        release = Path(folder) / f"{name}-v2.0.0"
        size = disk_bytes(release)
        print(
            f"== make train size={args.size} shard_size={shard} (conf/apps/train.yaml, "
            f"{args.workers} local processes)"
        )
        print(
            f"  build: {seconds:.1f}s wall, {args.size / seconds:.1f} tasks/s, peak RSS {peak:.0f} MB "
            f"(largest process), {size / 1e6:.1f} MB on disk ({size / args.size / 1e3:.1f} kB a task)"
        )
        verify_seconds, verify_peak = run(
            [
                sys.executable,
                "-m",
                "gridbench.commands.verify",
                f"release={release}",
                f"verify.workers={args.workers}",
                f"hydra.run.dir={folder}/hv",
            ]
        )
        print(f"  verify: {verify_seconds:.1f}s wall, peak RSS {verify_peak:.0f} MB, every task re-proved")
        per_task = seconds * args.workers / args.size  # core-seconds per task, start-up included
        print(f"  cost: {per_task * 1000:.1f} core-ms a task (this machine: {os.cpu_count()} cores)")
        for nodes, cores in ((1, 2), (1, 32), (4, 32), (16, 32)):
            hours = 100_000 * per_task / (nodes * cores) / 3600
            print(f"  projected 100,000 tasks on {nodes:2d} node(s) x {cores:2d} cores: {hours * 60:.1f} min")
        print("  (linear in cores; add Ray's start-up, 3-5 s here, and the shards' write per node)")


if __name__ == "__main__":
    main()
