"""Which CPython build runs the generator faster (issue 30): the same checkout's generation, in
one process per interpreter, alternated so that both see the same load.

``make install`` makes .venv from the distribution's CPython (/usr/bin/python3) when it is the
version python3 is: Debian, Ubuntu and Fedora compile it with profile-guided and link-time
optimisation into one static executable. pyenv's default build (python3 on this machine's PATH) is neither:
a shared libpython, no PGO. Same minor version, same draws, the same bytes; only the speed
differs. This script measures by how much, on the generation a release and a training set do
(the certificate, the measures, the repair's solves: CP-SAT's own time is the same C++ in both).

    .venv/bin/python bench/bench_python.py --other /path/to/other-venv/bin/python
    make bench OTHER=/path/to/other-venv/bin/python

Each run generates the same tasks (a sample of the default release's keys with the HiGHS
cross-check, and tasks of every training part) and prints CPU a task; the ratio is the median
of the other interpreter's over this one's. Without ``--other`` it says which build this
interpreter is and stops.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def describe(python: str) -> str:
    """Version, and whether the executable loads a shared libpython (pyenv's default) or not."""
    code = (
        "import platform, sys, sysconfig, json; print(json.dumps([platform.python_version(), "
        "sys._base_executable, sysconfig.get_config_var('CONFIG_ARGS')]))"
    )
    version, base, config = json.loads(
        subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    try:
        linked = subprocess.run(["ldd", base], capture_output=True, text=True).stdout
    except OSError:
        linked = ""
    build = "shared libpython" if "libpython" in linked else "static executable" if linked else "unknown"
    if "--enable-optimizations" in (config or ""):
        build += ", --enable-optimizations"
    return f"CPython {version} at {base} ({build})"


def _inner(tasks: int) -> None:
    """Generate the sample and print CPU ms a task (release sample, training tasks)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_floor import train_datasets
    from hydra import compose, initialize_config_dir

    from gridbench_core.paths import CONF_DIR
    from pipeline.config import generation_settings, register_configs, release_keys
    from pipeline.generation.build import generate_task

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config")
    settings, keys = generation_settings(cfg), release_keys(cfg)
    sample = keys[:: max(len(keys) // tasks, 1)][:tasks]
    generate_task(sample[0], settings)  # the solvers' libraries loaded and warm
    start = time.process_time()
    for key in sample:
        generate_task(key, settings)
    release = (time.process_time() - start) * 1000.0 / len(sample)
    datasets = [dataset for _, dataset in train_datasets(tasks)]
    start = time.process_time()
    for dataset in datasets:
        for index in range(tasks):
            dataset.made(index)
    training = (time.process_time() - start) * 1000.0 / (tasks * len(datasets))
    print(json.dumps({"release": release, "train": training}))


def _run(python: str, tasks: int) -> dict[str, float]:
    out = subprocess.run(
        [python, str(Path(__file__).resolve()), "--inner", str(tasks)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise SystemExit(f"error: {python} could not run the generation:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--other", help="the python of another venv with this project's dependencies")
    parser.add_argument("--tasks", type=int, default=60, help="tasks of the release sample and of each part")
    parser.add_argument("--rounds", type=int, default=3, help="alternated runs of each interpreter")
    parser.add_argument("--quick", action="store_true", help="16 tasks, 2 rounds")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    if args.inner:
        _inner(args.inner)
        return
    if args.quick:
        args.tasks, args.rounds = 16, 2
    print(f"== the interpreter (this one: {describe(sys.executable)})")
    if not args.other:
        print(
            "  pass --other PYTHON (make bench OTHER=PYTHON) to time the same generation under another build"
        )
        return
    print(f"  against: {describe(args.other)}")
    print(f"  {platform.machine()}, {args.tasks} tasks each, {args.rounds} alternated rounds")
    ours: dict[str, list[float]] = {"release": [], "train": []}
    theirs: dict[str, list[float]] = {"release": [], "train": []}
    for _ in range(args.rounds):
        for python, rows in ((sys.executable, ours), (args.other, theirs)):
            for key, value in _run(python, args.tasks).items():
                rows[key].append(value)
    for key, label in (("release", "default release sample (HiGHS)"), ("train", "training parts")):
        mine, other = statistics.median(ours[key]), statistics.median(theirs[key])
        print(
            f"  {label:32s} this {mine:5.1f} ms CPU a task, the other {other:5.1f} ms: "
            f"the other takes {other / mine:.2f}x  (runs: {', '.join(f'{v:.1f}' for v in ours[key])} / "
            f"{', '.join(f'{v:.1f}' for v in theirs[key])})"
        )


if __name__ == "__main__":
    main()
