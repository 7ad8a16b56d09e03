"""Environment benchmark (issue 4): tool calls per second for a realistic mix, episodes per
second of the `search` agent on the default release's 324 tasks, and the peak memory of an
evaluation of the whole default release. Prints numbers; never fails on speed."""

from __future__ import annotations

import random
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gridbench.agents import make_agent  # noqa: E402
from gridbench.env import EnvSettings, Episode  # noqa: E402
from pipeline.generation import TaskKey, generate_task  # noqa: E402

HIDDEN = (1, 5, 7, 11, 15, 21)
BUDGETS = (0, 2, 4, 8, 10, 15, 19, 21, 25)
DOMAINS = ("course", "meal", "pc_build", "shopping", "travel", "workforce")


def tool_mix(calls: int = 100_000) -> None:
    task = generate_task(TaskKey("course", 5, 7, 21, 25, 27)).task
    episode = Episode(task, EnvSettings())
    rng = random.Random(0)
    slots = list(task.slots)
    plan = []
    for _ in range(calls):
        slot = rng.choice(slots)
        draw = rng.random()
        if draw < 0.4:
            plan.append(
                (
                    "query_course_candidate_from_attribute",
                    {
                        "row": slot.row,
                        "col": slot.col,
                        "field": "price",
                        "operator": "<=",
                        "value": rng.randint(100, 500),
                    },
                )
            )
        elif draw < 0.7:
            plan.append(("set_slot", {"row": slot.row, "col": slot.col, "id": rng.choice(slot.candidates)}))
        elif draw < 0.9:
            plan.append(("check_course_slot_constraints", {"row": slot.row, "col": slot.col}))
        else:
            plan.append(("check_course_global_constraints", {}))
    kinds: Counter = Counter()
    start = time.perf_counter()
    for name, arguments in plan:
        kinds[name] += 1
        episode.call(name, arguments)
    seconds = time.perf_counter() - start
    print(
        f"tool calls: {calls} in {seconds:.2f}s = {calls / seconds:,.0f} calls/s in one process "
        f"(40% queries, 30% set_slot, 20% slot checks, 10% global checks; 5x7, H=21, K=27)"
    )
    for name in sorted(kinds):
        episode = Episode(task, EnvSettings())
        subset = [p for p in plan if p[0] == name][:20_000]
        start = time.perf_counter()
        for tool, arguments in subset:
            episode.call(tool, arguments)
        print(f"  {name:40s} {len(subset) / (time.perf_counter() - start):>10,.0f} calls/s")


def search_episodes() -> None:
    keys = [TaskKey(d, 5, 7, h, b, max(25, b + 2)) for d in DOMAINS for h in HIDDEN for b in BUDGETS]
    tasks = [generate_task(k) for k in keys]
    start = time.perf_counter()
    steps = solved = 0
    for made in tasks:
        episode = Episode(made.task)
        make_agent("search").play(episode, random.Random(0))
        steps += episode.steps
        solved += episode.grid == [list(r) for r in made.answer.truth]
    seconds = time.perf_counter() - start
    print(
        f"search agent: {len(tasks)} episodes of the default release in {seconds:.2f}s = "
        f"{len(tasks) / seconds:.1f} episodes/s, {steps / seconds:,.0f} tool calls/s, "
        f"solved {solved}/{len(tasks)} (one process)"
    )


def evaluation_memory() -> None:
    release = ROOT / "outputs" / "releases" / "gridbench-v2.0.0"
    python = sys.executable
    if not (release / "manifest.json").exists():
        subprocess.run(
            [python, "-m", "gridbench.commands.release"], cwd=ROOT, check=True, capture_output=True
        )
    runs = ROOT / "outputs" / "bench" / "runs"
    start = time.perf_counter()
    subprocess.run(
        [
            python,
            "-m",
            "gridbench.commands.evaluate",
            "agent=search",
            f"output_root={runs}",
            "resume=false",
            "failure_rates=[0.0]",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"evaluation of the default release (search, 324 episodes, 2 worker processes): "
        f"{seconds:.1f}s wall, peak RSS of the largest process {peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    tool_mix()
    search_episodes()
    evaluation_memory()
