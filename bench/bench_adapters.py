"""Adapter overhead per tool call against ``Episode.call`` directly: gymnasium ``step``
(dict and JSON-text actions), a TRL environment method, an MCP round trip over stdio, and a
turn of Inspect AI (mockllm, one tool call per turn, Inspect's whole turn machinery).

    make bench                       # part of the benchmark suite
    .venv/bin/python bench/bench_adapters.py --calls 2000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RELEASE = ROOT / "outputs" / "releases" / "gridbench-v2.0.0"


def moves(record, count: int) -> list[tuple[str, dict]]:
    """``count`` calls that never end the episode: reads, queries and placements in turn."""
    from gridbench_core.task_io import answer_from_dict, task_from_dict

    task = task_from_dict(record.task)
    truth = answer_from_dict(record.answer).truth_choice()
    slot = task.slots[0]
    field = sorted(k for k, v in task.items[slot.candidates[0]].items() if isinstance(v, int))[0]
    cycle = [
        ("get_slot_id", {"row": slot.row, "col": slot.col}),
        ("get_current_grid_state", {}),
        (
            f"query_{task.domain}_candidate_from_attribute",
            {"row": slot.row, "col": slot.col, "field": field, "operator": ">=", "value": 0},
        ),
        ("set_slot", {"row": slot.row, "col": slot.col, "id": truth[(slot.row, slot.col)]}),
    ]
    return [cycle[i % len(cycle)] for i in range(count)]


def per_call(label: str, seconds: float, calls: int, base: float | None) -> float:
    each = seconds / calls * 1e6
    extra = f"  (+{each - base:.0f} us, {each / base:.1f}x)" if base else ""
    print(f"  {label:42s} {each:9.1f} us per call{extra}")
    return each


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--mcp-calls", type=int, default=500)
    parser.add_argument("--inspect-calls", type=int, default=200)
    args = parser.parse_args()
    if not (RELEASE / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "gridbench.commands.release"], cwd=ROOT, check=True, capture_output=True
        )
    import gridbench
    from gridbench.env import EnvSettings, Episode
    from gridbench_core.task_io import task_from_dict

    record = gridbench.load_release(RELEASE).filter(domains=["course"], hidden_slots=[21])[0]
    plan = moves(record, args.calls)
    print(f"== Adapter overhead per tool call ({record.task_id}, H=21, a mix of reads, queries, placements)")

    episode = Episode(task_from_dict(record.task), EnvSettings(max_steps=10**9))
    start = time.perf_counter()
    for name, arguments in plan:
        episode.call(name, arguments)
    base = per_call("Episode.call (direct)", time.perf_counter() - start, len(plan), None)

    import gymnasium

    import gridbench.gym  # noqa: F401

    env = gymnasium.make("gridbench/Grid-v0", release=str(RELEASE), max_steps=10**9)
    env.reset(options={"task_id": record.task_id})
    start = time.perf_counter()
    for name, arguments in plan:
        env.step({"name": name, "arguments": arguments})
    per_call("gymnasium step (dict action)", time.perf_counter() - start, len(plan), base)
    texts = [json.dumps({"name": n, "arguments": a}) for n, a in plan]
    env.reset(options={"task_id": record.task_id})
    start = time.perf_counter()
    for text in texts:
        env.step(text)
    per_call("gymnasium step (JSON text action)", time.perf_counter() - start, len(plan), base)

    from gridbench.adapters.trl import environments

    rows, factories = environments(release=str(RELEASE), max_steps=10**9)
    row = next(r for r in rows if r["task_id"] == record.task_id)
    trl_env = factories[row["environment"]]()
    trl_env.reset(**{k: v for k, v in row.items() if k != "environment"})
    methods = [getattr(trl_env, name) for name, _ in plan]
    start = time.perf_counter()
    for method, (_, arguments) in zip(methods, plan, strict=True):
        method(**arguments)
    per_call("TRL environment method", time.perf_counter() - start, len(plan), base)

    per_call("MCP round trip over stdio", mcp_seconds(record, plan[: args.mcp_calls]), args.mcp_calls, base)
    seconds = inspect_seconds(record, plan[: args.inspect_calls])
    per_call("Inspect AI turn (mockllm, one call per turn)", seconds, args.inspect_calls, base)


def mcp_seconds(record, plan) -> float:
    import anyio
    from mcp import Client, StdioServerParameters

    async def run() -> float:
        server = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "gridbench.mcp",
                f"release={RELEASE}",
                f"task={record.task_id}",
                f"max_steps={10**9}",
            ],
        )
        async with Client(server) as client:
            await client.list_tools()
            start = time.perf_counter()
            for name, arguments in plan:
                await client.call_tool(name, arguments)
            return time.perf_counter() - start

    return anyio.run(run)


def inspect_seconds(record, plan) -> float:
    """Seconds per sample of K tool calls minus a sample of none: Inspect's cost of K turns."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model

    def policy_of(moves):
        def policy(messages, tools, tool_choice, config):
            done = sum(isinstance(m, ChatMessageTool) for m in messages)
            if done < len(moves):
                output = ModelOutput.for_tool_call("mockllm/model", *moves[done])
            else:
                output = ModelOutput.from_content("mockllm/model", "finished")
            output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return output

        return policy

    timings = []
    with tempfile.TemporaryDirectory() as logs:
        for moves in (plan, []):
            start = time.perf_counter()
            inspect_eval(
                "gridbench/gridbench",
                model=get_model("mockllm/model", custom_outputs=policy_of(moves)),
                task_args={
                    "release": str(RELEASE),
                    "task_ids": record.task_id,
                    "max_steps": 10**9,
                    "max_reminders": 0,
                },
                log_dir=logs,
                display="none",
            )
            timings.append(time.perf_counter() - start)
    return timings[0] - timings[1]


if __name__ == "__main__":
    main()
