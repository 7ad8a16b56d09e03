"""One episode's transcript, readably: the messages of an LLM episode, or the tool calls and
results of a baseline's (``make show``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from gridbench.errors import UserError
from pipeline.evaluation.runs import RunStore, read_transcript

WIDTH = 100


def _rows(run: Path) -> list[dict[str, Any]]:
    """The rows of every shard of the run: finished episodes, then those that ended in
    ``api_error`` and were not finished since (rows that cannot be read are skipped)."""
    finished: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    shards = {_shard(p.name) for p in [*run.glob("episodes*.jsonl"), *run.glob("api_errors*.jsonl")]}
    for shard in sorted(shards, key=lambda s: s or (-1, 0)):
        store = RunStore(run, shard)
        finished += store.finished().values()
        failed += store.failed().values()
    done = {row["episode_id"] for row in finished}
    return finished + [row for row in failed if row["episode_id"] not in done]


def _shard(name: str) -> tuple[int, int] | None:
    """The shard of ``episodes.shard-I-of-N.jsonl`` or ``api_errors...`` (None for no shard)."""
    parts = name.split(".")
    if len(parts) == 3 and parts[1].startswith("shard-"):
        index, _, count = parts[1][len("shard-") :].partition("-of-")
        if index.isdigit() and count.isdigit():
            return int(index), int(count)
    return None


def find_episode(run: Path, task: str, rate: float | None, trial: int | None) -> dict[str, Any]:
    """The row of the episode asked for; a clear error when none or several match."""
    if not run.is_dir():
        raise UserError(f"run={run} is not a folder; runs are under outputs/runs/<release>/")
    rows = [
        r
        for r in _rows(run)
        if r.get("task_id") == task
        and (rate is None or float(r.get("failure_rate", -1)) == rate)
        and (trial is None or int(r.get("trial", -1)) == trial)
    ]
    if not rows:
        raise UserError(f"no episode of task {task!r} in {run} (check task=, failure_rate=, trial=)")
    keys = sorted({(r["failure_rate"], r["trial"]) for r in rows})
    if len(keys) > 1:
        raise UserError(
            f"{len(keys)} episodes of {task} in {run} (failure_rate, trial): {keys}; "
            "pick one with failure_rate= and trial="
        )
    return rows[0]


def _block(label: str, text: str) -> str:
    body = "\n".join(
        textwrap.fill(line, WIDTH, subsequent_indent="  ") if len(line) > WIDTH else line
        for line in str(text).splitlines()
    )
    return f"[{label}]\n{body}"


def render_messages(messages: list[dict[str, Any]]) -> str:
    """An LLM episode's messages as readable text: reasoning, content and tool calls."""
    out = []
    for message in messages:
        role = message.get("role", "?")
        for key in ("reasoning_content", "reasoning"):
            if message.get(key):
                out.append(_block(f"{role} reasoning", message[key]))
        if message.get("content"):
            out.append(
                _block(
                    role if role != "tool" else f"tool result {message.get('tool_call_id', '')}",
                    message["content"],
                )
            )
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            out.append(f"[call {call.get('id', '')}] {function.get('name')}({function.get('arguments')})")
    return "\n\n".join(out)


def render_calls(calls: list[dict[str, Any]]) -> str:
    """A baseline episode's tool calls as numbered lines, each with its result's status and message."""
    lines = []
    for n, call in enumerate(calls, 1):
        result = call.get("result", {})
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
        lines.append(
            f"{n:5d}. {call.get('tool')}({arguments}) -> {result.get('status')}: {result.get('message', '')}"
        )
    return "\n".join(lines)


def show(run: Path, task: str, rate: float | None = None, trial: int | None = None) -> str:
    """The transcript of ``task``'s episode in ``run``, readable, under a header of its results
    (with the error of an episode that ended in ``api_error``)."""
    row = find_episode(run, task, rate, trial)
    head = (
        f"task {task}  run {run.name}  failure rate {row['failure_rate']}  trial {row['trial']}"
        f"\nsuccess {row['success']}  fraction correct {row['fraction_correct']:.3f}  end "
        f"{row.get('end_reason')}  steps {row['steps']}  turns {row.get('turns', '-')}"
        f"  retries {row.get('api_retries', '-')}\n"
    )
    if row.get("end_reason") == "api_error":
        head += f"api error (not scored; the same command retries it): {row.get('api_error') or 'unknown'}\n"
    path = run / "transcripts" / f"{row['episode_id']}.json.gz"
    if not path.is_file():
        return head + f"\n(no transcript: {path.name} is missing; the episode was run with traces=false)"
    transcript = read_transcript(path)["transcript"]
    is_chat = bool(transcript) and isinstance(transcript[0], dict) and "role" in transcript[0]
    return head + "\n" + (render_messages(transcript) if is_chat else render_calls(transcript))
