"""Where an evaluation run lives on disk, and how it survives a kill.

    <output_root>/<release>/<run>/
        episodes[.shard-I-of-N].jsonl   one row per finished episode (append-only)
        api_errors[.shard-I-of-N].jsonl episodes whose requests kept failing (retried on resume)
        results[.shard-I-of-N].parquet  the rows, sorted, rewritten at the end of each run
        transcripts/<episode_id>.json.gz  every message or tool call of one episode

A transcript is written to a temporary name and renamed before its row is appended, so a
kill at any point loses at most the episodes in flight and never duplicates one: a resumed
run skips the episodes that have a row and rewrites the transcripts of those that do not.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import UserError

CALL_KINDS = (
    "set_slot",
    "get_current_grid_state",
    "get_slot_id",
    "get_hidden_slot_query_budget",
    "get_global_check_budget",
    "done",
    "query_candidate_from_attribute",
    "get_item_info",
    "get_item_attributes",
    "check_slot_constraints",
    "check_global_constraints",
)


def call_columns(calls: dict[str, int], domain: str) -> dict[str, int]:
    """Tool calls by kind, the domain taken out of the name (``calls_query_candidate...``)."""
    out = dict.fromkeys((f"calls_{kind}" for kind in CALL_KINDS), 0)
    for name, count in calls.items():
        kind = name.replace(f"_{domain}_", "_")
        if f"calls_{kind}" in out:
            out[f"calls_{kind}"] += count
    return out


def parse_shard(text: str) -> tuple[int, int] | None:
    """``"i/n"`` -> (i, n); "" -> None; anything else is a clear error."""
    if not text:
        return None
    try:
        index, count = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise UserError(f"shard={text!r}: write shard=I/N with 0 <= I < N, e.g. shard=0/2") from None
    if not 0 <= index < count:
        raise UserError(f"shard={text!r}: need 0 <= I < N, e.g. shard=0/2 and shard=1/2")
    return index, count


class RunStore:
    """The files of one run (or one shard of it)."""

    def __init__(self, folder: Path, shard: tuple[int, int] | None = None) -> None:
        self.folder = folder
        suffix = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
        self.episodes = folder / f"episodes{suffix}.jsonl"
        self.api_errors = folder / f"api_errors{suffix}.jsonl"
        self.results = folder / f"results{suffix}.parquet"
        self.transcripts = folder / "transcripts"
        self.transcripts.mkdir(parents=True, exist_ok=True)

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows already written (a line cut by a kill is ignored and its episode redone)."""
        rows: dict[str, dict[str, Any]] = {}
        if self.episodes.exists():
            for line in self.episodes.read_text().splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and "episode_id" in row:
                    rows[row["episode_id"]] = row
        return rows

    def unanswered(self) -> set[str]:
        """Episodes whose requests kept failing and that no later run has finished."""
        ids = set()
        if self.api_errors.exists():
            for line in self.api_errors.read_text().splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and "episode_id" in row:
                    ids.add(str(row["episode_id"]))
        return ids - set(self.finished())

    def save(self, row: dict[str, Any], transcript: Any) -> None:
        """Transcript first (atomically; a message list, or the bytes of
        :func:`encode_transcript`), then the row: the row is the commit."""
        path = self.transcripts / f"{row['episode_id']}.json.gz"
        if transcript is not None:
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            data = transcript if isinstance(transcript, bytes) else encode_transcript(row, transcript)
            try:
                temporary.write_bytes(data)
                temporary.replace(path)
            except OSError:  # a full disk: no half-written transcript is left
                temporary.unlink(missing_ok=True)
                raise
        target = self.api_errors if row.get("end_reason") == "api_error" else self.episodes
        try:
            append_line(target, json.dumps(row, default=str) + "\n")
        except OSError:  # the row is the commit: without it the episode is run again
            if transcript is not None:
                path.unlink(missing_ok=True)
            raise

    def write_results(self) -> pl.DataFrame:
        """Write every finished row, sorted, to the results Parquet file (atomically); the frame."""
        rows = list(self.finished().values())
        frame = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
        if frame.height:
            frame = frame.sort(["domain", "hidden_slots", "decoy_budget", "failure_rate", "trial", "task_id"])
        temporary = self.results.with_name(f".{self.results.name}.tmp")
        try:  # bytes first: a full disk is then an OSError (polars reports its own kind)
            buffer = io.BytesIO()
            frame.write_parquet(buffer)
            temporary.write_bytes(buffer.getvalue())
            temporary.replace(self.results)
        except OSError:  # a full disk: the last complete results file stays
            temporary.unlink(missing_ok=True)
            raise
        return frame


def append_line(path: Path, line: str) -> None:
    """Append ``line`` to ``path`` whole or not at all: a write that fails part-way (a full
    disk) is cut back, so the file never ends in half a row."""
    data = line.encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(descriptor).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
        except OSError:
            os.ftruncate(descriptor, start)
            raise
    finally:
        os.close(descriptor)


def encode_transcript(row: dict[str, Any], transcript: Any) -> bytes:
    """The gzipped JSON file of one episode's transcript (done where the episode ran, so that
    worker processes compress in parallel and send bytes, not a pickled message list)."""
    record = {"episode_id": row["episode_id"], "task_id": row["task_id"], "transcript": transcript}
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def read_transcript(path: Path) -> dict[str, Any]:
    """The record of a gzipped JSON transcript file."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)
