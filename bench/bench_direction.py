"""Does the truth lean the way its one-sided rules point? A reader that knows no bound and
solves nothing: in each hidden cell it picks, among the options that pass the cell's rules,
one that a grid-scope count minimum asks for (its category), or avoids one a count maximum
caps, ties split evenly. Printed against chance (the mean of 1 / options), with a 95%
interval on the paired difference, overall and per domain and B. Reads the release files
only, so it also checks releases built by other code.

An outside audit found this reader 4 points above chance on 10x10 travel (the truth a museum
or outdoor activity in 44% of cells against 34% of the options): repair used to narrow
one-sided bounds, which keeps truths that beat their decoys in the bound's direction. Repair
now narrows windows only (pipeline/generation/repair.py: tighten).

    .venv/bin/python bench/bench_direction.py --build 12     # 12 seeds of 10x10 travel, then read
    .venv/bin/python bench/bench_direction.py outputs/releases/gridbench-v2.0.0 ...
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gridbench_core.task_io import task_from_dict  # noqa: E402
from solvers.checker import locally_valid_candidates  # noqa: E402


def _score(rules: list[dict], item: dict) -> int:
    """+1 for each grid count minimum the item helps, -1 for each count maximum it feeds."""
    score = 0
    for rule in rules:
        if rule.get("scope") != "grid" or item.get(rule["attribute"]) != rule.get("equals"):
            continue
        score += {"count_min": 1, "count_max": -1}.get(rule["kind"], 0)
    return score


def read(paths: list[Path]) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for release in paths:
        for task_file in sorted((release / "tasks").rglob("*.json")):
            task = json.loads(task_file.read_text())
            answer = json.loads((release / "answers" / task_file.relative_to(release / "tasks")).read_text())
            items = {item["id"]: item for item in task["items"]}
            rules = task["global_constraints"]
            if not any(rule["kind"] in ("count_min", "count_max") for rule in rules):
                continue
            parsed = task_from_dict(task)
            for slot in parsed.slots:
                options = locally_valid_candidates(parsed, slot)  # the candidates its own rules pass
                if len(options) < 2:
                    continue
                truth = answer["truth"][slot.row][slot.col]
                scores = [_score(rules, items[c]) for c in options]
                best = [c for c, s in zip(options, scores, strict=True) if s == max(scores)]
                hit = (truth in best) / len(best)
                for key in ("all", parsed.domain, f"{parsed.domain} B={parsed.decoy_budget}"):
                    out[key][0].append(hit)
                    out[key][1].append(1 / len(options))
    return out


def line(name: str, hits: list[float], chances: list[float]) -> str:
    n = len(hits)
    lift = [h - c for h, c in zip(hits, chances, strict=True)]
    mean = sum(lift) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in lift) / max(n - 1, 1) / n)
    return (
        f"  {name:28s} accuracy {sum(hits) / n:.3f}  chance {sum(chances) / n:.3f}  "
        f"lift {mean:+.3f} [{mean - 1.96 * se:+.3f}, {mean + 1.96 * se:+.3f}]  cells {n}"
    )


def build(seeds: int, work: Path) -> list[Path]:
    paths = []
    for seed in range(1, seeds + 1):
        name = f"travel10x10s{seed}"
        subprocess.run(
            [sys.executable, "-m", "gridbench.commands.main", "release", f"release.output_root={work}",
             f"release.cache_root={work}/cache", f"release.name={name}", f"release.seed={seed}",
             "grid=10x10", "release.domains=[travel]"],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        paths.append(next(work.glob(f"{name}-v*")))  # the release version of conf/release
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("releases", nargs="*", type=Path)
    parser.add_argument("--build", type=int, default=0, help="build this many seeds of 10x10 travel first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        paths = list(args.releases) + (build(args.build, Path(work)) if args.build else [])
        if not paths:
            parser.error("give release folders or --build N")
        found = read(paths)
        print("== the count-rule direction reader (knows no bound, solves nothing)")
        for name in sorted(found, key=lambda k: (k != "all", k)):
            print(line(name, *found[name]))


if __name__ == "__main__":
    main()
