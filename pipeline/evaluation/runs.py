"""Where an evaluation run lives on disk, and how it survives a kill.

    <output_root>/<release>/<run>/
        episodes[.shard-I-of-N].jsonl   one row per finished episode (append-only)
        api_errors[.shard-I-of-N].jsonl episodes whose requests kept failing (retried on resume)
        results[.shard-I-of-N].parquet  the rows, sorted, rewritten at the end of each run
        transcripts/<episode_id>.json.gz  every message or tool call of one episode

        run.json                          what the run is (agent, model, server, prompt, settings)

A transcript is written to a temporary name and renamed before its row is appended, so a
kill at any point loses at most the episodes in flight and never duplicates one: a resumed
run skips the episodes that have a row and rewrites the transcripts of those that do not.
A row that cannot be read back (cut by a kill, edited, wrong types, an id that is not one,
invalid UTF-8) is skipped and named, never fatal: its episode is played again, and every
good row is kept. ``results.parquet`` always has every column of :data:`RESULT_SCHEMA`,
even with no row.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from gridbench_core.errors import UserError
from pipeline.evaluation.diagnostics import DIAGNOSTIC_COLUMNS

MAX_ROW_BYTES = 4 * 1024 * 1024
EPISODE_ID = re.compile(r"^[0-9a-f]{16}\Z")
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


# Every column of a results row, with its type. Rows written before a column existed read
# back with it null; columns an agent adds beyond these are kept after them.
_BASE = {
    "episode_id": pl.String,
    "release": pl.String,
    "run": pl.String,
    "task_id": pl.String,
    "domain": pl.String,
    "hidden_slots": pl.Int64,
    "decoy_budget": pl.Int64,
    "agent": pl.String,
    "policy": pl.String,
    "model": pl.String,
    "query_budget": pl.String,
    "check_budget": pl.String,
    "failure_rate": pl.Float64,
    "trial": pl.Int64,
    "min_resistant_share": pl.Float64,
    "success": pl.Boolean,
    "fraction_correct": pl.Float64,
    "steps": pl.Int64,
    "invalid_calls": pl.Int64,
    "failed_calls": pl.Int64,
    "queries_used": pl.Int64,
    "checks_used": pl.Int64,
    "finished": pl.Boolean,
    "decoy_cells": pl.Int64,
    "decoy_cells_correct": pl.Int64,
    "decoy_cells_chance": pl.Float64,
    "end_reason": pl.String,
}
_LLM = {
    "turns": pl.Int64,
    "text_tool_calls": pl.Int64,
    "malformed_tool_calls": pl.Int64,
    "reminders": pl.Int64,
    "length_cuts": pl.Int64,
    "api_retries": pl.Int64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "reasoning_tokens": pl.Int64,
    "usage_errors": pl.Int64,
    "latency_ms_sum": pl.Float64,
    "latency_ms_median": pl.Float64,
    "api_error": pl.String,
    "prompt_sha256": pl.String,
}
RESULT_SCHEMA: dict[str, Any] = {
    **_BASE,
    **{f"calls_{kind}": pl.Int64 for kind in CALL_KINDS},
    "tool_call_counts": pl.String,  # JSON: every tool's calls by its full name (was calls_json)
    **_LLM,
    "wall_ms": pl.Float64,
    **DIAGNOSTIC_COLUMNS,
}
# Columns of older runs, read back under their current names.
RENAMED = {"calls_json": "tool_call_counts"}
# Written by every version of the runner: a row without one of these is not a row.
REQUIRED = tuple(
    k
    for k in RESULT_SCHEMA
    if k not in _LLM and k not in DIAGNOSTIC_COLUMNS and k not in ("run", "min_resistant_share")
)


def row_problem(row: Any) -> str:
    """Why ``row`` (a parsed line of ``episodes.jsonl``) cannot be a results row ("" if it can).
    A column an older version named otherwise (:data:`RENAMED`) is renamed in place."""
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object"
    for old, new in RENAMED.items():
        if old in row and new not in row:
            row[new] = row.pop(old)
    episode = row.get("episode_id")
    if not isinstance(episode, str) or not EPISODE_ID.match(episode):
        return "episode_id is not 16 hex digits"
    for name in REQUIRED:
        if name not in row:
            return f"no {name}"
    for name, kind in RESULT_SCHEMA.items():
        value = row.get(name)
        if value is not None and not _fits(value, kind):
            return f"{name} is {type(value).__name__} {str(value)[:40]!r}, not {kind}"
    return ""


def _fits(value: Any, kind: Any) -> bool:
    if kind == pl.Boolean:
        return isinstance(value, bool)
    if kind == pl.Int64:
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if kind == pl.Float64:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


# What a results table read from disk must hold before a report draws it (a table written by
# `make eval` always does): the columns every row has, of their types, with values that can be.
MAX_HIDDEN = 30 * 30  # hidden cells of the largest grid (pipeline.generation.validate.MAX_SIDE)
LEFT = ("queries_left", "checks_left")  # budgets left at the end: -1 when unlimited
NOT_NULL = (
    *("episode_id", "task_id", "domain", "hidden_slots", "decoy_budget", "failure_rate", "trial"),
    *("success", "fraction_correct", "steps"),
)


def _dtype_fits(dtype: Any, kind: Any) -> bool:
    if dtype == pl.Null:
        return True
    if kind == pl.Int64:
        return bool(dtype.is_integer())
    if kind == pl.Float64:
        return bool(dtype.is_integer() or dtype.is_float())
    return bool(dtype == kind)


def table_problem(frame: pl.DataFrame) -> str:
    """Why ``frame`` (a results table read from disk) cannot be reported ("" if it can): a
    column every row has is missing, a column has another type, a value is null where none
    may be, or a count or a share is impossible (negative, a share outside [0, 1], more
    correct decoy cells than decoy cells, success without every cell right)."""
    missing = [name for name in REQUIRED if name not in frame.columns]
    if missing:
        return f"no column {missing[0]!r} ({len(missing)} of the {len(REQUIRED)} of a results table missing)"
    for name, kind in RESULT_SCHEMA.items():
        if name in frame.columns and not _dtype_fits(frame.schema[name], kind):
            return f"column {name!r} is {frame.schema[name]}, not {kind}"
    for name in NOT_NULL:
        if frame[name].null_count():
            return f"column {name!r} has {frame[name].null_count()} empty values"
    counts = [n for n, kind in RESULT_SCHEMA.items() if kind == pl.Int64 and n in frame.columns]
    floats = [n for n, kind in RESULT_SCHEMA.items() if kind == pl.Float64 and n in frame.columns]
    rules: list[tuple[str, pl.Expr]] = [
        *((f"{n} < 0", pl.col(n) < 0) for n in counts if n not in LEFT),
        *((f"{n} < -1", pl.col(n) < -1) for n in counts if n in LEFT),  # -1: unlimited
        *(
            (f"{n} not a finite number >= 0", ~pl.col(n).cast(pl.Float64).is_finite() | (pl.col(n) < 0))
            for n in floats
        ),
        ("hidden_slots outside 1..900", (pl.col("hidden_slots") < 1) | (pl.col("hidden_slots") > MAX_HIDDEN)),
        ("failure_rate outside [0, 1)", pl.col("failure_rate") >= 1),
        ("fraction_correct above 1", pl.col("fraction_correct") > 1),
        ("decoy_cells_correct above decoy_cells", pl.col("decoy_cells_correct") > pl.col("decoy_cells")),
        ("decoy_cells_chance above decoy_cells", pl.col("decoy_cells_chance") > pl.col("decoy_cells")),
        ("success without every hidden cell right", pl.col("success") & (pl.col("fraction_correct") < 1)),
        ("every hidden cell right without success", ~pl.col("success") & (pl.col("fraction_correct") == 1)),
    ]
    for what, broken in rules:
        bad = frame.filter(broken.fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            return f"{bad.height} rows with {what} (the first: episode {str(row['episode_id'])[:20]!r})"
    return ""


def results_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The rows as a table with every column of :data:`RESULT_SCHEMA` (null where a row has
    none), extra columns after them, sorted; an empty table keeps the columns."""
    extra = sorted({key for row in rows for key in row} - set(RESULT_SCHEMA))
    columns = [*RESULT_SCHEMA, *extra]
    frame = pl.DataFrame([_column(name, [row.get(name) for row in rows]) for name in columns])
    if frame.height:
        frame = frame.sort(["domain", "hidden_slots", "decoy_budget", "failure_rate", "trial", "task_id"])
    return frame


def _column(name: str, values: list[Any]) -> pl.Series:
    kind = RESULT_SCHEMA.get(name)
    if kind is not None:
        return pl.Series(name, values, dtype=kind, strict=False)
    try:  # a column a custom agent adds: its own type, or its JSON text when mixed
        return pl.Series(name, values)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series(name, [None if v is None else json.dumps(v, default=str) for v in values])


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
        suffix = self.suffix = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
        self.episodes = folder / f"episodes{suffix}.jsonl"
        self.api_errors = folder / f"api_errors{suffix}.jsonl"
        self.results = folder / f"results{suffix}.parquet"
        self.transcripts = folder / "transcripts"
        self.identity = folder / "run.json"
        self.skipped: list[str] = []  # rows that could not be read back, named

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold this run (or shard) for one writer: a second eval started into the same folder
        would play the same episodes and append its rows beside the first's (and a failed
        append cut back can cut the other's line), so it is refused, naming the fix. The lock is
        the operating system's (``flock``): a killed eval leaves nothing to clean up."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f".lock{self.suffix}"
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(
                    f"another eval is writing to {self.folder}{' (this shard)' if self.suffix else ''}: "
                    "wait for it to finish (running the same command again then resumes), or give "
                    "run_name=NAME for a separate run"
                ) from None
            # the whole run and a shard of it, or shards of two splittings, play the same
            # episodes: each would play them again (hostile round 9); shards of one splitting
            # play apart and may run together
            clashing = [name for name in self.held_by_others() if self._clashes(name)]
            if clashing:
                raise UserError(
                    f"another eval is writing to {self.folder} ({clashing[0].lstrip('.')}), and it plays "
                    "some of this one's episodes: wait for it to finish, or run the shards of one "
                    "splitting (shard=I/N with the same N) side by side"
                )
            yield
        finally:
            os.close(descriptor)  # releases the lock

    def held_by_others(self) -> list[str]:
        """The lock files of this run folder (other than this store's) that an eval holds now."""
        import fcntl

        held = []
        for path in sorted(self.folder.glob(".lock*")):
            if path.name == f".lock{self.suffix}":
                continue
            try:
                descriptor = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(path.name)
            finally:
                os.close(descriptor)
        return held

    def _clashes(self, lock_name: str) -> bool:
        """Whether the eval holding ``lock_name`` plays episodes this one plays."""
        mine, theirs = self.suffix, lock_name[len(".lock") :]
        if not mine or not theirs:
            return True
        return mine.rsplit("-of-", 1)[1] != theirs.rsplit("-of-", 1)[1]

    def _played(self) -> bool:
        """Whether any shard of the run folder has saved an episode row."""
        return any(path.is_file() and path.stat().st_size for path in self.folder.glob("*.jsonl"))

    def claim(self, identity: dict[str, Any]) -> None:
        """Make the folder this run's: record ``identity`` (what changes an episode's result),
        or refuse, naming what differs, when the folder holds a run with another one."""
        self.transcripts.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
        if self.identity.is_file():
            try:
                held = json.loads(self.identity.read_text(encoding="utf-8"))["identity"]
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                raise UserError(f"{self.identity} is damaged; delete it or give another run_name=") from None
            if held == json.loads(json.dumps(identity, default=str)):
                return
            if self._played():
                raise UserError(
                    f"{self.folder} holds a run with another configuration ({_difference(held, identity)}); "
                    "give run_name=NAME (or output_root=) for a separate run, or delete the folder"
                )
            if self.held_by_others():  # its run is going, and has not saved an episode yet
                raise UserError(
                    f"{self.folder} holds a run with another configuration ({_difference(held, identity)}) "
                    "that is running now; give run_name=NAME for a separate run"
                )
            # a folder claimed by a run that stopped before its first episode: nothing to keep
        elif self._played():
            raise UserError(
                f"{self.folder} holds episodes of an older gridbench (no run.json): their episode ids "
                "are made another way and cannot be matched; give run_name=NAME for a new run, or "
                "move the folder away"
            )
        record = {"identity": identity, "sha256": digest}
        temporary = self.identity.with_name(f".run.json.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
        temporary.replace(self.identity)

    def _read(self, path: Path) -> list[dict[str, Any]]:
        """The good rows of a JSON-lines file; every other line is named in ``skipped`` (a
        last line cut by a kill, without its newline, is expected and not named)."""
        if not path.is_file():
            return []
        rows = []
        for number, raw, complete in _lines(path):
            if not raw.strip():
                continue
            problem, row = _parse_line(raw)
            if problem:
                if complete or problem != "not JSON":
                    self.skipped.append(f"{path.name} line {number}: {problem}")
                continue
            rows.append(row)
        return rows

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows already written, by episode id (a row that cannot be read is skipped and its
        episode played again)."""
        self.skipped = []
        return {row["episode_id"]: row for row in self._read(self.episodes)}

    def failed(self) -> dict[str, dict[str, Any]]:
        """The last ``api_error`` row of every episode that ended so (finished since or not)."""
        return {row["episode_id"]: row for row in self._read(self.api_errors)}

    def unanswered(self) -> set[str]:
        """Episodes whose requests kept failing and that no later run has finished."""
        return set(self.failed()) - set(self.finished())

    def save(self, row: dict[str, Any], transcript: Any) -> None:
        """Transcript first (atomically; a message list, or the bytes of
        :func:`encode_transcript`), then the row: the row is the commit. A row that could not
        be read back (a count past int64, a value of the wrong type) is refused loudly: kept, it
        would be skipped on every resume and its episode played again for ever."""
        problem = row_problem(json.loads(json.dumps(row, default=str)))
        if problem:
            raise UserError(
                f"the results row of task {str(row.get('task_id'))[:80]!r} cannot be kept ({problem}); "
                "nothing was written for it"
            )
        path = self.transcripts / f"{row['episode_id']}.json.gz"
        if transcript is not None:
            self.transcripts.mkdir(parents=True, exist_ok=True)
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
        frame = results_frame(list(self.finished().values()))
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.results.with_name(f".{self.results.name}.{os.getpid()}.tmp")
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


def _lines(path: Path) -> Any:
    """(number, bytes, ends with a newline) of each line, each read in at most
    :data:`MAX_ROW_BYTES` + 1 bytes of memory (the rest of a longer line is skipped)."""
    with open(path, "rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_ROW_BYTES + 1)
            if not raw:
                return
            number += 1
            complete = raw.endswith(b"\n")
            while not complete and len(raw) > MAX_ROW_BYTES:  # an endless line: skip its rest
                rest = handle.readline(MAX_ROW_BYTES + 1)
                if not rest:
                    break
                complete = rest.endswith(b"\n")
            yield number, raw.rstrip(b"\n"), complete


def _parse_line(raw: bytes) -> tuple[str, Any]:
    if len(raw) > MAX_ROW_BYTES:
        return f"longer than {MAX_ROW_BYTES} bytes", None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8", None
    try:
        row = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON", None
    return row_problem(row), row


def _difference(held: Any, wanted: dict[str, Any]) -> str:
    """The first keys whose values differ between two identities, as ``key: old -> new``."""
    wanted = json.loads(json.dumps(wanted, default=str))
    if not isinstance(held, dict):
        return "unreadable identity"
    flat_held, flat_wanted = _flatten(held), _flatten(wanted)
    keys = sorted(k for k in set(flat_held) | set(flat_wanted) if flat_held.get(k) != flat_wanted.get(k))
    return ", ".join(f"{k}: {flat_held.get(k)!r} -> {flat_wanted.get(k)!r}" for k in keys[:3])[:400]


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict) and item:
            out.update(_flatten(item, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = item
    return out


def encode_transcript(row: dict[str, Any], transcript: Any) -> bytes:
    """The gzipped JSON file of one episode's transcript (done where the episode ran, so that
    worker processes compress in parallel and send bytes, not a pickled message list)."""
    record = {"episode_id": row["episode_id"], "task_id": row["task_id"], "transcript": transcript}
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    # a lone surrogate (a server may send "\ud800") has no UTF-8: it is written as "?"
    return gzip.compress(text.encode("utf-8", "replace"), compresslevel=6, mtime=0)


def read_transcript(path: Path) -> dict[str, Any]:
    """The record of a gzipped JSON transcript file."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)
