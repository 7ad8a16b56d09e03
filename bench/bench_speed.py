"""Speed before and after (issue 30): this checkout against a "before" checkout, side by side
in one run (A B A B ..., so both meet the same load), as ratios after / before. Prints numbers,
never fails on speed.

- the default release (``gridbench release``: 324 tasks, 5x7, HiGHS cross-check) as a whole
  process: wall and CPU (user + sys of the command and its workers), peak RSS;
- per stage, in ms of CPU a task (one process, no pool): generation, certificate, measures,
  cross-check (each task's own timings), the card's audit and the writing of the files;
- start-up: the command up to its composed configuration (``--cfg job``: imports and Hydra),
  and the start of a two-worker pool that has loaded the generator;
- ``make train size=N`` (default 10,000): wall, CPU and the peak RSS of its largest process;
- the quick suite (``pytest`` with the repository's options), with ``--suite``.

    .venv/bin/python bench/bench_speed.py --before ../gridbench-before
    .venv/bin/python bench/bench_speed.py --before /path/to/checkout --quick   # 1,000 train tasks
    make bench BEFORE=/path/to/checkout        # the whole benchmark suite, this one last

Each checkout runs its own code (``PYTHONPATH`` = that checkout) in the same interpreter; each
run works in a temporary folder, so no cache is reused. Without ``--before`` only this
checkout is measured. Both must build the same release: the deterministic files of the two
default releases are compared byte for byte and the result printed.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DETERMINISTIC = ["tasks", "answers", "data", "metadata.parquet", "schemas", "README.md", "LICENSE"]

STAGES = r"""
import sys, time, json
import numpy, pyarrow  # loaded before any stage is timed: an import is no stage's cost
from collections import defaultdict
from pathlib import Path
from hydra import compose, initialize_config_dir
from gridbench_core.paths import CONF_DIR
from pipeline.config import register_configs, generation_settings, release_keys
import pipeline.generation.measures as measures
import pipeline.generation.seal as seal
import pipeline.storage.write as write
from pipeline.storage.cache import make_tasks
from pipeline.storage.write import write_release
cpu = time.process_time
spent = defaultdict(float)

def timed(module, name, stage):
    inner = getattr(module, name)
    def wrapper(*args, **kwargs):
        start = cpu()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[stage] += cpu() - start
    setattr(module, name, wrapper)

timed(seal, "certify", "certificate")
timed(seal, "measure", "measures (all)")
timed(seal, "crosscheck_answer", "cross-check")
timed(measures, "reasoning_depth", "  ladder depth")
timed(measures, "effort", "  search_nodes + joint_bits")
timed(measures, "decoy_resistance", "  propagation")
timed(measures, "distance_to_ambiguity", "  distance to ambiguity")
timed(write, "audit", "card audit (policies + bounds)")
timed(write, "data_tables", "data/ Parquet tables")
count = int(sys.argv[1])
register_configs()
with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
    cfg = compose(config_name="config")
settings = generation_settings(cfg)
keys = release_keys(cfg)
keys = keys[:: max(len(keys) // count, 1)][:count]
start = cpu()
made, _ = make_tasks(keys, settings, None, 1, "stages")
generation = cpu() - start
start = cpu()
write_release(Path(sys.argv[2]) / "r", made, "bench", "1.0.0", {}, False)
writing = cpu() - start
own = generation - spent["certificate"] - spent["measures (all)"] - spent["cross-check"]
out = {"tasks": len(made), "generation (all)": generation, "  drawing + repair": own}
out.update(spent)
out["writing (all, audit included)"] = writing
print(json.dumps(out))
"""

POOL = r"""
import time
start = time.perf_counter()
from pipeline.generation.keys import GenerationSettings
from pipeline.parallel import parallel_imap
from pipeline.storage.cache import settings_fingerprint
# each worker imports the generator's modules to read the function it is sent
list(parallel_imap(settings_fingerprint, [GenerationSettings()] * 4, 2, "", show=False))
print(time.perf_counter() - start)
"""


def run(checkout: Path, args: list[str], cwd: Path) -> dict[str, object]:
    """Wall seconds and stdout of ``python ARGS`` run with ``checkout``'s code in ``cwd``."""
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *args], cwd=cwd, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{checkout}: {' '.join(args[:2])} failed: {out.stderr[-2000:]}")
    return {"wall": wall, "out": out.stdout}


def measured(checkout: Path, args: list[str], cwd: Path, code: int | None = 0) -> dict[str, float]:
    """:func:`run` with the CPU and peak RSS of the command (``wait4``'s usage); it must exit
    with ``code`` (None: any code, returned as ``code``)."""
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if code is not None and os.waitstatus_to_exitcode(status) != code:
        error = process.stderr.read().decode()[-2000:] if process.stderr else ""
        raise SystemExit(f"{checkout}: {' '.join(args[:4])} failed: {error}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024.0,
        "code": float(os.waitstatus_to_exitcode(status)),
    }


def differing_files(a: Path, b: Path) -> list[str]:
    """The deterministic files (relative paths) that two releases do not hold byte for byte
    the same (one missing on either side counts); empty when they are identical."""

    def differ(x: Path, y: Path, name: str) -> list[str]:
        if x.is_file() or y.is_file():
            return [] if x.is_file() and y.is_file() and filecmp.cmp(x, y, shallow=False) else [name]
        if not (x.is_dir() and y.is_dir()):
            return [name]
        names = sorted({p.name for p in x.iterdir()} | {p.name for p in y.iterdir()})
        return [found for child in names for found in differ(x / child, y / child, f"{name}/{child}")]

    return [found for name in DETERMINISTIC for found in differ(a / name, b / name, name.rstrip("/"))]


def ratio(after: float, before: float | None) -> str:
    return f"{after / before:.2f}x" if before else "-"


def row(label: str, after: list[float], before: list[float] | None, unit: str) -> None:
    a = statistics.median(after)
    b = statistics.median(before) if before else None
    shown = f"{b:9.2f} {unit:3s}" if b is not None else " " * 13
    print(f"  {label:34s} before {shown}  after {a:9.2f} {unit:3s}  after/before {ratio(a, b)}")


def paired(checkouts: dict[str, Path], runs: int, job) -> dict[str, list[dict[str, float]]]:  # type: ignore[no-untyped-def]
    """``job(checkout)`` ``runs`` times for each checkout, alternating."""
    out: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(runs):
        for name, checkout in checkouts.items():
            out[name].append(job(name, checkout))
    return out


def script(checkout: Path) -> str:
    """The ``gridbench`` console script's module in ``checkout`` (a checkout from before the
    commands moved to gridbench/commands/ keeps them in the libraries' package)."""
    moved = (checkout / "gridbench" / "commands" / "main.py").is_file()
    return "gridbench.commands.main" if moved else "pipeline.commands.main"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="a checkout of the code before (its top folder)")
    parser.add_argument("--runs", type=int, default=1, help="paired runs of the release and start-up")
    parser.add_argument("--train-size", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 training tasks, 60 tasks per stage")
    parser.add_argument("--stage-tasks", type=int, default=108, help="tasks of the per-stage profile")
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--suite", action="store_true", help="time the quick suite too (minutes)")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    if args.quick:
        args.train_size, args.stage_tasks = 1000, 60
    checkouts = {"after": ROOT}
    if args.before is not None:
        if not any((args.before / p / "commands" / "main.py").is_file() for p in ("gridbench", "pipeline")):
            raise SystemExit(f"--before {args.before}: not a gridbench checkout")
        checkouts = {"before": args.before.resolve(), "after": ROOT}
    print(f"== speed: {', '.join(f'{k}={v}' for k, v in checkouts.items())}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)

        def release(name: str, checkout: Path) -> dict[str, float]:
            cwd = work / f"release-{name}"
            subprocess.run(["rm", "-rf", str(cwd)], check=True)
            cwd.mkdir()
            return measured(checkout, ["-m", script(checkout), "release"], cwd)

        results = paired(checkouts, args.runs, release)
        print("-- the default release (324 tasks, 5x7, HiGHS cross-check), whole process")
        for figure, unit in (("wall", "s"), ("cpu", "s"), ("rss", "MB")):
            before = [r[figure] for r in results.get("before", [])] or None
            row(f"release {figure}", [r[figure] for r in results["after"]], before, unit)
        if "before" in checkouts:
            name = "outputs/releases/gridbench-v2.0.0"
            differ = differing_files(work / "release-before" / name, work / "release-after" / name)
            shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
            verdict = f"DIFFERENT: {shown}" if differ else "byte-identical"
            print(f"  deterministic files of the two releases: {verdict}")

        print(
            f"-- per stage, CPU ms a task ({args.stage_tasks} of the release's tasks, one process, no pool)"
        )
        stages = {}
        for name, checkout in checkouts.items():
            cwd = work / f"stages-{name}"
            cwd.mkdir()
            out = run(checkout, ["-c", STAGES, str(args.stage_tasks), str(cwd)], cwd)
            stages[name] = json.loads(str(out["out"]).strip().splitlines()[-1])
        for stage in [k for k in stages["after"] if k != "tasks"]:
            per = {name: 1000.0 * s[stage] / s["tasks"] for name, s in stages.items()}
            row(stage, [per["after"]], [per["before"]] if "before" in per else None, "ms")

        print("-- start-up")

        def startup(name: str, checkout: Path) -> dict[str, float]:
            cfg = measured(checkout, ["-m", script(checkout), "release", "--cfg", "job"], work)
            # the path of every real run up to its work: imports, the pre-check's composition,
            # Hydra's own (the body then refuses the missing release)
            plain = measured(checkout, ["-m", script(checkout), "verify", "release=nowhere"], work, 2)
            openenv = measured(checkout, ["-c", "import gridbench.adapters.openenv_env"], work)
            pool = run(checkout, ["-c", POOL], work)
            return {
                "cfg_wall": cfg["wall"],
                "cfg_cpu": cfg["cpu"],
                "plain_cpu": plain["cpu"],
                "openenv_wall": openenv["wall"],
                "pool": float(str(pool["out"]).strip()),
            }

        runs = paired(checkouts, max(args.runs, 3), startup)
        for figure, label in (
            ("cfg_wall", "imports + Hydra, wall"),
            ("cfg_cpu", "imports + Hydra, CPU"),
            ("plain_cpu", "verify release=nowhere, CPU"),
            ("openenv_wall", "OpenEnv adapter import, wall"),
            ("pool", "2-worker pool start, wall"),
        ):
            before = [r[figure] for r in runs.get("before", [])] or None
            row(label, [r[figure] for r in runs["after"]], before, "s")

        if not args.no_train:
            from bench_train import sampling_shard_size  # a script beside this one

            shard = sampling_shard_size(args.train_size)
            print(f"-- make train size={args.train_size} shard_size={shard} (2 workers)")

            def train(name: str, checkout: Path) -> dict[str, float]:
                out = work / f"train-{name}"
                return measured(
                    checkout,
                    [
                        "-m",
                        script(checkout),
                        "train",
                        f"size={args.train_size}",
                        f"shard_size={shard}",
                        f"output_root={out}",
                        "workers=2",
                    ],
                    work,
                )

            runs = paired(checkouts, 1, train)
            for figure, unit in (("wall", "s"), ("cpu", "s"), ("rss", "MB")):
                before = [r[figure] for r in runs.get("before", [])] or None
                row(f"train {figure}", [r[figure] for r in runs["after"]], before, unit)
            wall = runs["after"][0]["wall"]
            print(f"  100,000 tasks at this rate: {wall * 100_000 / args.train_size / 60:.1f} min (after)")

        if args.suite:
            print("-- the quick suite (pytest with the repository's options)")

            def suite(name: str, checkout: Path) -> dict[str, float]:
                # timed whatever it says (a test of the install fails in a second worktree
                # that shares this checkout's venv); the exit code is printed
                return measured(checkout, ["-m", "pytest", "-q", "-p", "no:cacheprovider"], checkout, None)

            runs = paired(checkouts, 1, suite)
            print("  exit codes: " + ", ".join(f"{name} {int(r[0]['code'])}" for name, r in runs.items()))
            for figure in ("wall", "cpu"):
                before = [r[figure] for r in runs.get("before", [])] or None
                row(f"quick suite {figure}", [r[figure] for r in runs["after"]], before, "s")


if __name__ == "__main__":
    main()
