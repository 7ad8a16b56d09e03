"""One episode's transcript, readably: the messages of an LLM episode, or the tool calls and
results of a baseline's (``make show``)."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path
from typing import Any

from gridbench_core.errors import UserError
from pipeline.evaluation.runs import RunStore
from pipeline.storage.read import shown
from pipeline.storage.safe import BIDI, ReleaseError, read_gzip_json, regular_file

WIDTH = 100


EPISODE_ID = re.compile(r"^[0-9a-f]{16}\Z")  # what episode_id() makes: a transcript's file name


def _rows(run: Path) -> list[dict[str, Any]]:
    """The rows of every shard of the run: finished episodes, then those that ended in
    ``api_error`` and were not finished since (rows that cannot be read are skipped)."""
    finished: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    files = [*run.glob("episodes*.jsonl"), *run.glob("api_errors*.jsonl")]
    for path in files:  # a FIFO, a device or a link is refused before it is opened
        try:
            regular_file(run, path.name)
        except ReleaseError as error:
            raise UserError(f"{shown(run)}/{error}") from None
    shards = {_shard(p.name) for p in files}
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def find_episode(run: Path, task: str, rate: float | None, trial: int | None) -> dict[str, Any]:
    """The row of the episode asked for; a clear error when none or several match."""
    if not has_folder(run):
        raise UserError(f"run={shown(run)} is not a folder; runs are under outputs/runs/<release>/")
    rows = [
        r
        for r in _rows(run)
        if r.get("task_id") == task
        and (rate is None or _number(r.get("failure_rate")) == rate)
        and (trial is None or _number(r.get("trial")) == trial)
    ]
    if not rows:
        raise UserError(
            f"no episode of task {shown(task, 80)!r} in {shown(run)} (check task=, failure_rate=, trial=)"
        )
    keys = sorted({(str(r.get("failure_rate")), str(r.get("trial"))) for r in rows})
    if len(keys) > 1:
        raise UserError(
            f"{len(keys)} episodes of {shown(task, 80)} in {shown(run)} (failure_rate, trial): {keys[:10]}; "
            "pick one with failure_rate= and trial="
        )
    return rows[0]


def has_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; a path the system cannot look at is one line."""
    if "\0" in str(path) or len(str(path)) > 4096:
        raise UserError(f"{shown(path)}: not a usable path")
    try:
        return path.is_dir()
    except OSError as error:
        raise UserError(f"{shown(path)}: cannot be read ({error.strerror})") from None


def printable(text: Any) -> str:
    """``text`` safe to print on a terminal: control characters (escape sequences) and
    direction overrides are shown as escapes; lines and tabs stay."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(
        char if char in "\n\t" or (char.isprintable() and char not in BIDI) else ascii(char)[1:-1]
        for char in value
    )


def _block(label: str, text: str) -> str:
    text, label = printable(text), printable(label)
    body = "\n".join(
        textwrap.fill(line, WIDTH, subsequent_indent="  ") if len(line) > WIDTH else line
        for line in str(text).splitlines()
    )
    return f"[{label}]\n{body}"


def render_messages(messages: list[dict[str, Any]]) -> str:
    """An LLM episode's messages as readable text: reasoning, content and tool calls."""
    out = []
    for message in messages:
        if not isinstance(message, dict):
            continue
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
            function = call.get("function", {}) if isinstance(call, dict) else {}
            function = function if isinstance(function, dict) else {}
            text = f"[call {call.get('id', '') if isinstance(call, dict) else ''}] "
            out.append(printable(f"{text}{function.get('name')}({function.get('arguments')})"))
    return "\n\n".join(out)


def render_calls(calls: list[dict[str, Any]]) -> str:
    """A baseline episode's tool calls as numbered lines, each with its result's status and message."""
    lines = []
    for n, call in enumerate(calls, 1):
        if not isinstance(call, dict):
            continue
        result: dict[str, Any] = call["result"] if isinstance(call.get("result"), dict) else {}
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False, default=str)
        answer = f"{result.get('status')}: {result.get('message', '')}"
        lines.append(printable(f"{n:5d}. {call.get('tool')}({arguments}) -> {answer}"))
    return "\n".join(lines)


def how_it_went(row: dict[str, Any]) -> str:
    """The episode's diagnostics in two lines ("" for a row of a run made before them)."""
    if not row.get("depth_rung"):
        return ""
    informed = row.get("informed_step")
    when = f"at call {informed} (turn {row.get('informed_turn')})" if informed is not None else "never"
    undone = {True: "undone", False: "never undone", None: "none"}.get(row.get("first_wrong_undone"), "-")
    first = row.get("first_wrong_step")
    return (
        f"knew enough to decide it ({row.get('depth_rung')} task): {when}; wasted calls "
        f"{row.get('wasted_calls')}; calls {row.get('steps')} vs the ideal {row.get('ideal_calls')}\n"
        f"wrong set_slot {row.get('wrong_sets')} (first {'at call ' + str(first) if first else 'none'}, "
        f"{undone}); violations introduced {row.get('violations_introduced')}, repaired "
        f"{row.get('violations_repaired')}, left {row.get('violations_at_end')}\n"
    )


def show(run: Path, task: str, rate: float | None = None, trial: int | None = None) -> str:
    """The transcript of ``task``'s episode in ``run``, readable, under a header of its results
    (with the error of an episode that ended in ``api_error``). The transcript is found by the
    row's episode id (16 hex digits, so its path stays in ``run/transcripts``) and read
    bounded: a gzip bomb is refused, never expanded."""
    row = find_episode(run, task, rate, trial)
    episode = row["episode_id"]
    if not EPISODE_ID.match(episode):
        raise UserError(f"{shown(run)}: the row of {shown(task, 80)} names no episode id of this code")
    fraction = _number(row.get("fraction_correct"))
    head = printable(
        f"task {task}  run {run.name}  failure rate {row.get('failure_rate')}  trial {row.get('trial')}"
        f"\nsuccess {row.get('success')}  fraction correct "
        f"{'-' if fraction is None else format(fraction, '.3f')}  end "
        f"{row.get('end_reason')}  steps {row.get('steps')}  turns {row.get('turns', '-')}"
        f"  retries {row.get('api_retries', '-')}\n"
    )
    head += printable(how_it_went(row))
    if row.get("end_reason") == "api_error":
        error = printable(str(row.get("api_error") or "unknown"))[:2000]
        head += f"api error (not scored; the same command retries it): {error}\n"
    relative = f"transcripts/{episode}.json.gz"
    if os.path.lexists(run / relative) and not (run / relative).is_file():
        raise UserError(f"{shown(run)}/{relative}: not a regular file (a folder or a link), which is refused")
    if not (run / relative).is_file():
        return head + f"\n(no transcript: {relative} is missing; the episode was run with traces=false)"
    try:
        record = read_gzip_json(run, relative)
    except ReleaseError as error:
        raise UserError(f"{shown(run)}/{error}") from None
    transcript = _checked_transcript(record, episode, f"{shown(run)}/{relative}")
    if not transcript:
        return head + "\n(the transcript holds no message and no tool call)"
    is_chat = "role" in transcript[0]
    return head + "\n" + (render_messages(transcript) if is_chat else render_calls(transcript))


def _checked_transcript(record: Any, episode: str, where: str) -> list[dict[str, Any]]:
    """The transcript of ``record`` when it is the one the runner wrote for ``episode``: a
    list of messages (each with a ``role``) or of tool calls (each with a ``tool``); anything
    else is a damaged or replaced file, one line (never shown as an empty transcript)."""
    transcript = record.get("transcript") if isinstance(record, dict) else None
    if not isinstance(transcript, list) or record.get("episode_id") != episode:
        raise UserError(f"{where}: not the transcript of episode {episode} that this code wrote")
    key = "role" if transcript and isinstance(transcript[0], dict) and "role" in transcript[0] else "tool"
    for number, entry in enumerate(transcript):
        if not isinstance(entry, dict) or key not in entry:
            kind = (
                f"a JSON {type(entry).__name__}"
                if not isinstance(entry, dict)
                else f"an object without {key!r}"
            )
            raise UserError(
                f"{where}: entry {number} is {kind}, not a {'message' if key == 'role' else 'tool call'}: "
                "the file is damaged (run the episode again: delete its row from episodes.jsonl)"
            )
    return transcript
