"""Tasks per second of a release build against workers: the local pool with 1 and 2
processes, Ray with 1 and 2 CPUs (a local instance; its start-up is timed apart), and the
overhead of Ray against the local pool at the same parallelism.

    make bench                       # part of the benchmark suite
    .venv/bin/python bench/bench_executors.py --domains course,meal
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(root: Path, domains: list[str], workers: int) -> int:
    from hydra import compose, initialize_config_dir

    from gridbench.commands.release import build as build_release
    from pipeline.config import register_configs

    register_configs()
    overrides = [
        f"release.domains=[{','.join(domains)}]",
        f"release.output_root={root}/releases",
        f"release.cache_root={root}/cells",  # fresh: every task is generated
        f"release.workers={workers}",
    ]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=overrides)
    assert build_release(cfg) == 0
    return len(list((root / "releases").glob("*/tasks/*/*.json")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domains", default="course,meal")
    args = parser.parse_args()
    domains = args.domains.split(",")
    import contextlib
    import io

    from pipeline.parallel import Executor, use_executor

    print(f"== Executors: a 5x7 release of {', '.join(domains)} (every task made, certified, cross-checked)")
    rates = {}
    for label, executor, workers in (
        ("local pool, 1 process", Executor(), 1),
        ("local pool, 2 processes", Executor(), 2),
        ("Ray, 1 CPU", Executor("ray", num_cpus=1), 1),
        ("Ray, 2 CPUs", Executor("ray", num_cpus=2), 2),
    ):
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            with use_executor(executor):
                ready = time.perf_counter() - start
                begin = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    tasks = build(Path(folder), domains, workers)
                seconds = time.perf_counter() - begin
        rates[label] = tasks / seconds
        extra = f" (+{ready:.1f}s to start Ray)" if executor.kind == "ray" else ""
        print(f"  {label:24s} {tasks} tasks in {seconds:5.1f}s = {tasks / seconds:5.1f} tasks/s{extra}")
    for n, (local, ray) in enumerate(
        (("local pool, 1 process", "Ray, 1 CPU"), ("local pool, 2 processes", "Ray, 2 CPUs")), start=1
    ):
        print(f"  Ray overhead at {n} CPU(s): {100 * (rates[local] / rates[ray] - 1):+.0f}% wall time")


if __name__ == "__main__":
    main()
