"""LLM runner overhead against a loopback OpenAI-compatible server that answers at once
(a scripted policy in another process, so that its CPU is not counted). Prints turns per
second, the client's CPU milliseconds per turn (the median of ``--repeat`` runs; the tasks
are loaded before the clock starts), request latency and transcript size, and the CPU of the
shared agent loop alone (:class:`AgentLoop.take` on parsed replies, no HTTP).

    make bench                              # part of the benchmark suite
    .venv/bin/python bench/bench_runner.py --episodes 128 --concurrency 64 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _serve(release: str, queue: mp.Queue) -> None:
    from gridbench.agents.llm.loopback import LoopbackServer, Script, ScriptedPolicy

    server = LoopbackServer(ScriptedPolicy(Path(release)), Script())
    queue.put(server.start())
    threading.Event().wait()


def _release(folder: Path, tasks: int) -> Path:
    from gridbench.commands.release import build
    from tests.helpers_release import compose_config

    per_cell = max(1, -(-tasks // 8))
    cfg = compose_config(
        [
            "release.domains=[course,travel]",
            "grid.hidden_slots=[11,21]",
            "grid.decoy_budgets=[15,25]",
            f"release.tasks_per_cell={per_cell}",
            f"release.output_root={folder}",
            f"release.cache_root={folder}/cells",
            "release.name=bench",
            "release.crosscheck=false",
        ]
    )
    build(cfg)
    return folder / "bench-v2.0.0"


def _tasks(release: Path) -> list:
    from gridbench_core.task_io import task_from_dict

    return [task_from_dict(json.loads(p.read_text())) for p in sorted((release / "tasks").rglob("*.json"))]


async def _play(tasks: list, url: str, episodes: int, concurrency: int) -> list:
    from gridbench.agents.llm import LLMAgent, LLMSettings, load_templates
    from gridbench.env import EnvSettings, Episode

    agent = LLMAgent(
        LLMSettings.from_yaml_defaults(model="scripted", base_url=url, concurrency=concurrency),
        load_templates(),
    )
    gate = asyncio.Semaphore(concurrency)

    async def one(n: int):
        async with gate:
            return await agent.play(Episode(tasks[n % len(tasks)], EnvSettings(), seed=n))

    return await asyncio.gather(*(one(n) for n in range(episodes)))


def _loop_only(outcomes: list, tasks: list) -> float | None:
    """CPU milliseconds per turn of the shared loop alone: the replies of the recorded
    transcripts, parsed, fed to a fresh :class:`AgentLoop` (None before the shared loop)."""
    try:
        from gridbench.agents.llm.loop import AgentLoop, LoopSettings, parse_reply
    except ImportError:
        return None
    from gridbench.env import EnvSettings, Episode

    replies = []
    for n, outcome in enumerate(outcomes):
        bodies = [
            {"choices": [{"message": m, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 1}}
            for m in outcome.messages
            if m["role"] == "assistant"
        ]
        replies.append((tasks[n % len(tasks)], [json.dumps(b) for b in bodies]))
    start, turns = time.process_time(), 0
    for task, bodies in replies:
        loop = AgentLoop(Episode(task, EnvSettings()), LoopSettings.from_llm(), [])
        for body in bodies:
            if loop.over:
                break
            loop.take(parse_reply(json.loads(body)))  # type: ignore[arg-type]
            turns += 1
    return 1000 * (time.process_time() - start) / max(turns, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        release = _release(Path(folder), args.episodes)
        tasks = _tasks(release)
        queue: mp.Queue = mp.get_context("spawn").Queue()
        server = mp.get_context("spawn").Process(target=_serve, args=(str(release), queue), daemon=True)
        server.start()
        url = queue.get(timeout=60)
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            outcomes = asyncio.run(_play(tasks, url, args.episodes, args.concurrency))
            runs.append((time.perf_counter() - wall, time.process_time() - cpu, outcomes))
        server.terminate()
    turns = sum(o.turns for o in runs[0][2])
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    outcomes = runs[0][2]
    latency = [x for o in outcomes for x in o.latencies_ms]
    sizes = [len(gzip.compress(json.dumps(o.messages, separators=(",", ":")).encode())) for o in outcomes]
    raw = [len(json.dumps(o.messages, separators=(",", ":")).encode()) for o in outcomes]
    print(
        f"LLM runner, loopback server: {args.episodes} episodes, {args.concurrency} in flight, "
        f"{turns} turns ({turns / len(outcomes):.1f} per episode), all done: "
        f"{all(o.end_reason == 'done' for o in outcomes)}; median of {args.repeat} runs"
    )
    print(
        f"  {turns / wall:.0f} turns/s wall; client CPU {1000 * cpu / turns:.2f} ms/turn "
        f"(= {turns / cpu:.0f} turns/s on one core); request latency median "
        f"{statistics.median(latency):.1f} ms"
    )
    loop = _loop_only(outcomes, tasks)
    if loop is not None:
        print(f"  the shared agent loop alone (parse + take, no HTTP): {loop:.3f} ms/turn")
    print(
        f"  transcript per episode: {statistics.mean(raw) / 1024:.1f} KiB JSON, "
        f"{statistics.mean(sizes) / 1024:.1f} KiB gzip"
    )


if __name__ == "__main__":
    main()
