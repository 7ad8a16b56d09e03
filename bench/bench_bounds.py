"""Bounds without a tell and difficulty that keeps scaling (issue 26), per release: the truth's
position in every window against the null, the truth at one-sided bounds against the null,
the worst soft heuristic per cell and per task against its control, the cages decided by
their own windows, the finer measures by B, seconds per task, and verify's time with every
difficulty claim derived again (and without, to show what that costs).

    python bench/bench_bounds.py                                  # builds the 5x7 preset, seed 0
    python bench/bench_bounds.py --build 5x5,10x10 --seed 3       # other presets, another seed
    python bench/bench_bounds.py 5x7=outputs/releases/gridbench-v2.0.0 old=path/to/v1   # releases

Prints numbers; never fails on a figure.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from pipeline.integrity.soft import RUNG_NAMES, region_cage_decided_alone  # noqa: E402
from pipeline.integrity.tells import bounds_audit  # noqa: E402
from pipeline.storage.read import release_pairs  # noqa: E402
from solvers.ladder import FIXPOINT  # noqa: E402


def build(preset: str, seed: int, root: Path) -> Path:
    from gridbench.commands.release import build as build_release
    from tests.helpers_release import compose_config

    name = f"bench-{preset}"
    cfg = compose_config(
        [
            f"grid={preset}",
            f"release.name={name}",
            f"release.seed={seed}",
            "release.crosscheck=false",
            f"release.output_root={root}",
            f"release.cache_root={root / 'cache'}",
        ]
    )
    build_release(cfg)
    return next(root.glob(f"{name}-v*"))


def positions(report: dict) -> None:
    for kind, rows in report["positions"].items():
        n = sum(report["position_counts"][kind])
        cells = "  ".join(f"{r['share']:.3f}/{r['null']:.3f}" for r in rows)
        worst = max(abs(r["diff"]) for r in rows)
        print(f"  position in {kind} windows (n={n}), truth/null per fifth: {cells}")
        print(f"    largest gap {worst:.3f}")
    for label, r in report["at_bound"].items():
        print(f"  at the bound of {label} (n={r['n']:.0f}): truth {r['share']:.3f}, null {r['null']:.3f}")


def heuristics(report: dict) -> None:
    for level in ("cell", "task"):
        scored = [
            (where, name, s)
            for where, names in report["soft"].items()
            if where.startswith(level)
            for name, s in names.items()
            if s["release_n"]
        ]
        if not scored:
            continue
        where, name, s = max(scored, key=lambda t: t[2]["lift"])
        print(
            f"  worst soft heuristic per {level}: {name} ({where}) {s['release']:.3f} vs control "
            f"{s['control']:.3f}, lift {s['lift']:+.3f} "
            f"[{s['lift'] - s['half']:+.3f}, {s['lift'] + s['half']:+.3f}], "
            f"chance {s['release_chance']:.3f}, n={s['release_n']:.0f}"
        )
    for name, s in report["regions"].items():
        print(
            f"  region {name}: {s['release']:.3f} vs control {s['control']:.3f} (chance "
            f"{s['release_chance']:.3f}, n={s['release_n']:.0f})"
        )
    print(f"  failures: {report['failures'] or 'none'}")


def effort(release: Path, pairs: list) -> None:
    meta = pl.read_parquet(release / "metadata.parquet")
    alone = counted = 0
    for task, _ in pairs:
        one, many = region_cage_decided_alone(task)
        alone, counted = alone + one, counted + many
    if counted:
        print(f"  cages decided by their own windows alone: {alone}/{counted} ({alone / counted:.2f})")
    has_effort = "search_nodes" in meta.columns and meta["search_nodes"].null_count() < meta.height
    print("     B    n  beyond fixpoint  search  median nodes  mean log2 nodes  mean joint bits")
    for budget in sorted(set(meta["decoy_budget"].to_list())):
        part = meta.filter((pl.col("decoy_budget") == budget) & (pl.col("hidden_slots") >= 5))
        if part.height == 0:
            continue
        depth = part["depth"].to_list()
        beyond = sum(d > FIXPOINT for d in depth) / len(depth)
        search = sum(d == 4 for d in depth) / len(depth)
        if has_effort:
            nodes = sorted(part["search_nodes"].to_list())
            log2 = sum(math.log2(n) for n in nodes) / len(nodes)
            bits = float(part["joint_bits"].mean())  # type: ignore[arg-type]
            tail = f"{nodes[len(nodes) // 2]:>12}  {log2:>15.2f}  {bits:>15.1f}"
        else:
            tail = "(not recorded)"
        print(f"  {budget:>4} {part.height:>4}  {beyond:>15.2f}  {search:>6.2f}  {tail}")


def seconds(release: Path) -> None:
    timings = pl.read_parquet(release / "timings.parquet")
    columns = [c for c in timings.columns if c.endswith("_ms")]
    per_task = sorted(sum(row[c] or 0.0 for c in columns) / 1000 for row in timings.iter_rows(named=True))
    print(
        f"  seconds per task (generation, certificate, measures): median {statistics.median(per_task):.2f}, "
        f"p90 {per_task[int(0.9 * (len(per_task) - 1))]:.2f}, max {per_task[-1]:.2f}"
    )


def verify_time(release: Path) -> None:
    from pipeline.storage import verification
    from pipeline.storage.verification import VerifySettings, verify_release
    from solvers.results import SolverSettings

    # one process: the claims are switched off in this process (spawned workers would import
    # the module afresh and derive them anyway)
    settings = VerifySettings(SolverSettings(time_limit_s=60.0), None, 1)
    start = time.perf_counter()
    report = verify_release(release, settings)
    full = time.perf_counter() - start
    claims = verification.measure_claims
    verification.measure_claims = lambda *args: []  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        verify_release(release, settings)
        bare = time.perf_counter() - start
    finally:
        verification.measure_claims = claims  # type: ignore[assignment]
    print(
        f"  verify (CP-SAT, 1 process): {full:.1f}s with every difficulty claim derived again, "
        f"{bare:.1f}s without ({full / bare:.2f}x); {'ok' if report.ok else 'FAILED'}"
    )


def bench(label: str, release: Path, check: bool) -> None:
    pairs = list(release_pairs(release))
    print(f"\n== {label}: {release.name}, {len(pairs)} tasks")
    start = time.perf_counter()
    report = bounds_audit(pairs, seed=0, rungs=tuple(RUNG_NAMES))
    print(f"  bounds audit: {time.perf_counter() - start:.1f}s")
    positions(report)
    heuristics(report)
    effort(release, pairs)
    seconds(release)
    if check:
        verify_time(release)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="5x7", help="presets to build with this code (comma-separated)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("releases", nargs="*", help="LABEL=PATH of releases to read instead of building")
    args, _ = parser.parse_known_args()  # make bench passes its ARGS to every script
    given = [item.partition("=")[::2] for item in args.releases if "=" in item]
    if given:
        for label, path in given:
            bench(label, Path(path), not args.no_verify)
        return
    with tempfile.TemporaryDirectory() as folder:
        for preset in args.build.split(","):
            start = time.perf_counter()
            release = build(preset, args.seed, Path(folder))
            print(f"built {preset} (seed {args.seed}) in {time.perf_counter() - start:.0f}s")
            bench(preset, release, not args.no_verify)


if __name__ == "__main__":
    main()
