"""The results explorer (``gridbench view``): one static folder, self-contained, for a set of
runs. It opens from disk (``index.html``) or behind any static server
(``python -m http.server``); it loads nothing from the network.

    <output>/index.html               the page, its script and style inline
    <output>/data/summary.js          runs, success by (H, B) with Wilson intervals,
                                      diagnostics, one row per episode
    <output>/data/task/<key>.js       a task's grid, hidden cells and rules (opened episodes)
    <output>/data/truth/<key>.js      its truth, loaded only when asked for ("Reveal the truth")
    <output>/data/episode/<key>.js    an episode's transcript: the run's own gzip, base64

Data files are scripts (``GB_LOAD(kind, key, data)``), since a page opened from disk may not
fetch files. Their names are hashes (a task id from a file never becomes a path), their JSON
has ``<``, ``>``, ``&`` and the line separators escaped, and the page writes every value as
text, never as HTML. The folder is written to a temporary folder and renamed over the old one
(nothing half-written is ever seen), and the same runs give the same bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shutil
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gridbench_core.errors import UserError
from gridbench_core.stats import wilson
from pipeline.evaluation.runs import RESULT_SCHEMA
from pipeline.evaluation.summary import DIAGNOSTICS_HEADER, diagnostics_cells, load_runs
from pipeline.storage.read import shown
from pipeline.storage.safe import MAX_GZIP_BYTES, ReleaseError, read_bytes, read_json

ASSETS = Path(__file__).resolve().parent / "assets"
MARKER = ".gridbench-view"  # a folder this code wrote (the only kind it replaces)
COLUMNS = (
    ("run", "run"),
    ("task_id", "task"),
    ("domain", "domain"),
    ("hidden_slots", "H"),
    ("decoy_budget", "B"),
    ("failure_rate", "failure rate"),
    ("trial", "trial"),
    ("success", "success"),
    ("fraction_correct", "correct"),
    ("steps", "steps"),
    ("ideal_calls", "ideal calls"),
    ("informed_turn", "informed at turn"),
    ("wasted_calls", "wasted"),
    ("wrong_sets", "wrong sets"),
    ("first_wrong_undone", "first wrong undone"),
    ("violations_at_end", "violations left"),
    ("end_reason", "end"),
)
FACTS = (
    ("model", "model"),
    ("agent", "agent"),
    ("depth_rung", "rung that decides it"),
    ("informed_step", "informed at call"),
    ("informed_turn", "informed at turn"),
    ("turns", "turns"),
    ("wasted_queries", "wasted queries"),
    ("wasted_checks", "wasted checks"),
    ("first_wrong_step", "first wrong set_slot at call"),
    ("violations_introduced", "violations introduced"),
    ("violations_repaired", "repaired"),
    ("queries_used", "queries used"),
    ("queries_left", "queries left"),
    ("checks_used", "checks used"),
    ("checks_left", "checks left"),
    ("invalid_calls", "invalid calls"),
    ("failed_calls", "failed calls"),
    ("api_retries", "API retries"),
    ("prompt_tokens", "prompt tokens"),
    ("completion_tokens", "completion tokens"),
)
ROW_KEYS = sorted({key for key, _ in COLUMNS + FACTS} | {"episode_id", "release", "informed_step"})


@dataclass(frozen=True)
class ViewStats:
    """What a build wrote: episodes, transcripts embedded, tasks, bytes, seconds."""

    episodes: int
    transcripts: int
    tasks: int
    bytes: int
    seconds: float


def key_of(*parts: str) -> str:
    """A file name for data named by outside text: 16 hex digits of its SHA-256."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def script_json(value: Any) -> str:
    """JSON that is safe inside a script: no ``</script>``, ``<!--`` or line separators."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _plain(value: Any) -> Any:
    """A cell of the results as JSON (NaN and infinities as null)."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def build_view(roots: list[Path], out: Path, releases: dict[str, Path]) -> ViewStats:
    """Write the explorer of every run under ``roots`` to ``out`` (replacing a folder this
    code wrote before); ``releases`` maps a release name to its folder (task files, truth)."""
    start = time.perf_counter()
    frame, unscored = load_runs(roots)
    _check_frame(frame)
    _check_output(out)
    folders = {root.name: root for root in roots}
    temporary = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        (temporary / "data").mkdir(parents=True)
        rows, tasks, notes = _write_episodes(frame, folders, releases, temporary)
        summary = _summary(frame, unscored, rows, notes, roots)
        _write(temporary / "data" / "summary.js", f"window.GB_SUMMARY = {script_json(summary)};\n")
        _write(temporary / "index.html", page())
        _write(
            temporary / MARKER, "a results explorer written by gridbench view; replaced by the next build\n"
        )
        _replace(temporary, out)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    embedded = sum(1 for row in rows if row["has_transcript"])
    return ViewStats(len(rows), embedded, tasks, size, time.perf_counter() - start)


KEYS = ("episode_id", "task_id", "domain", "hidden_slots", "decoy_budget", "failure_rate", "trial", "success")


def _check_frame(frame: pl.DataFrame) -> None:
    """Every row names its episode, task and cell with values of the declared types (a
    results table edited by hand, or written by something else, is refused by run)."""
    for column in KEYS:
        expected = RESULT_SCHEMA[column]
        bad = frame.filter(pl.col(column).is_null()) if frame.schema[column] == expected else frame
        if bad.height:
            runs = ", ".join(sorted(set(bad["run"].to_list()))[:3])
            raise UserError(
                f"the results of run {runs} have {column} missing or not {expected}: the table is "
                "damaged; delete its results.parquet and rerun make eval (episodes.jsonl keeps the rows)"
            )


def _check_output(out: Path) -> None:
    if out.exists() and not (out.is_dir() and (out / MARKER).is_file()):
        raise UserError(
            f"output={shown(out)} exists and is not a folder gridbench view wrote; "
            "choose another output= or move it away"
        )


def _replace(temporary: Path, out: Path) -> None:
    """Put the finished folder at ``out``: the old one is moved aside, then removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        out.rename(old)
    temporary.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def page() -> str:
    """``index.html`` with its style and script inline."""
    html = (ASSETS / "explorer.html").read_text(encoding="utf-8")
    css = (ASSETS / "explorer.css").read_text(encoding="utf-8")
    js = (ASSETS / "explorer.js").read_text(encoding="utf-8")
    return html.replace("/*CSS*/", css).replace("/*JS*/", js)


# Episodes, tasks and transcripts ----------------------------------------------------------------


def _write_episodes(
    frame: pl.DataFrame, folders: dict[str, Path], releases: dict[str, Path], out: Path
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """One row per episode for the table, and the data files of its task and transcript."""
    rows: list[dict[str, Any]] = []
    tasks: dict[str, bool] = {}
    notes: list[str] = []
    for release in sorted(set(frame["release"].to_list())):
        root = releases.get(release)
        if root is None or not (root / "manifest.json").is_file():
            where = shown(root) if root is not None else "(none given)"
            notes.append(
                f"Release {release} was not found at {where}: episodes show no grid and no truth "
                "(give release=PATH)."
            )
    for record in frame.sort(["run", "task_id", "failure_rate", "trial", "episode_id"]).iter_rows(named=True):
        row = {key: _plain(record.get(key)) for key in ROW_KEYS}
        row["informed"] = record.get("informed_step") is not None if record.get("depth_rung") else None
        row["key"] = key_of(str(record["run"]), str(record["episode_id"]))
        root = releases.get(str(record["release"]))
        task_key = key_of(str(record["release"]), str(record["domain"]), str(record["task_id"]))
        if task_key not in tasks:
            tasks[task_key] = _write_task(root, record, task_key, out) if root is not None else False
        row["task"] = task_key if tasks[task_key] else None
        folder = folders.get(str(record["release"]))
        note = _write_transcript(
            folder / str(record["run_in_release"]) if folder else None, record, row["key"], out
        )
        row["has_transcript"], row["transcript_note"] = not note, note
        rows.append(row)
    return rows, sum(tasks.values()), notes


def _write_task(root: Path, record: dict[str, Any], key: str, out: Path) -> bool:
    """The task's grid, hidden cells and rules, and separately its truth; False when the
    release has no such task (or its files cannot be read)."""
    relative = f"{record['domain']}/{record['task_id']}.json"
    try:
        task = read_json(root, f"tasks/{relative}")
        answer = read_json(root, f"answers/{relative}")
    except ReleaseError:
        return False
    if not isinstance(task, dict) or not isinstance(answer, dict):
        return False
    shown_task = {
        "grid": task.get("grid"),
        "slots": [[s.get("row"), s.get("col")] for s in task.get("slots") or [] if isinstance(s, dict)],
        "rules": task.get("global_constraints"),
        "instruction": str(task.get("instruction", ""))[:200_000],
    }
    truth = {"truth": answer.get("truth"), "roles": answer.get("roles")}
    _write(out / "data" / "task" / f"{key}.js", f'GB_LOAD("task", "{key}", {script_json(shown_task)});\n')
    _write(out / "data" / "truth" / f"{key}.js", f'GB_LOAD("truth", "{key}", {script_json(truth)});\n')
    return True


def _write_transcript(run: Path | None, record: dict[str, Any], key: str, out: Path) -> str:
    """Embed the episode's gzip transcript as it is (base64); why not, when it is not."""
    episode = str(record["episode_id"])
    relative = f"transcripts/{episode}.json.gz"
    if run is None or not (run / relative).is_file():
        return "No transcript (the run was made with traces=false, or the file is gone)."
    try:
        packed = read_bytes(run, relative)
        _check_gzip(packed, relative)
    except ReleaseError as error:
        return f"The transcript is not shown: {error}"
    data = base64.b64encode(packed).decode("ascii")
    _write(out / "data" / "episode" / f"{key}.js", f'GB_LOAD("episode", "{key}", "{data}");\n')
    return ""


def _check_gzip(packed: bytes, relative: str) -> None:
    """Refuse a gzip file that is not one, or expands past :data:`MAX_GZIP_BYTES` (a bomb)."""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    total = 0
    try:
        for chunk in _chunks(packed):
            total += len(inflater.decompress(chunk, MAX_GZIP_BYTES + 1 - total))
            while inflater.unconsumed_tail and total <= MAX_GZIP_BYTES:
                total += len(inflater.decompress(inflater.unconsumed_tail, MAX_GZIP_BYTES + 1 - total))
            if total > MAX_GZIP_BYTES:
                raise ReleaseError(f"{relative}: decompresses to more than {MAX_GZIP_BYTES} bytes")
    except zlib.error as error:
        raise ReleaseError(f"{relative}: not a readable gzip file ({str(error)[:80]})") from None
    if not inflater.eof:
        raise ReleaseError(f"{relative}: a gzip file cut short")


def _chunks(data: bytes, size: int = 1 << 20) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


# The summary ------------------------------------------------------------------------------------


def _summary(
    frame: pl.DataFrame,
    unscored: dict[str, int],
    rows: list[dict[str, Any]],
    notes: list[str],
    roots: list[Path],
) -> dict[str, Any]:
    rates = sorted(set(frame["failure_rate"].to_list()))
    runs = sorted(set(frame["run"].to_list()))
    releases = ", ".join(sorted(set(frame["release"].to_list()))) or ", ".join(r.name for r in roots)
    waiting = {run: n for run, n in sorted(unscored.items()) if n}
    scored = set(frame["run_in_release"].to_list())
    empty = sorted(run for run in unscored if run.split(" @ ")[0] not in scored)
    notes = list(notes)
    if waiting:
        notes.append("Not scored yet (ended in api_error; make eval retries them): " + _listing(waiting))
    if empty:
        notes.append(f"Runs without a scored episode: {', '.join(empty)}.")
    if not frame.height:
        notes.append("No scored episode yet: nothing to show (run make eval).")
    diagnostics = []
    for rate in rates:
        part = frame.filter(pl.col("failure_rate") == rate)
        cells = []
        for run in sorted(set(part["run"].to_list())):
            rows_of = part.filter((pl.col("run") == run) & pl.col("depth_rung").is_not_null())
            cells.append(diagnostics_cells(run, rows_of))
        diagnostics.append({"rate": f"{rate:g}", "rows": cells})
    return {
        "title": f"Release {releases}: {len(unscored)} runs, {frame.height} scored episodes",
        "notes": notes,
        "rates": [f"{rate:g}" for rate in rates],
        "heatmaps": [_heatmap(frame, run, rate) for rate in rates for run in runs if _has(frame, run, rate)],
        "diagnostics_header": [cell.strip() for cell in DIAGNOSTICS_HEADER.strip("| ").split(" | ")],
        "diagnostics": diagnostics,
        "columns": [list(pair) for pair in COLUMNS],
        "task_columns": [list(pair) for pair in TASK_COLUMNS] + [[f"run:{run}", run] for run in runs],
        "task_rows": _task_rows(frame, runs),
        "episode_facts": [list(pair) for pair in FACTS],
        "rows": rows,
    }


TASK_COLUMNS = (
    ("task_id", "task"),
    ("domain", "domain"),
    ("hidden_slots", "H"),
    ("decoy_budget", "B"),
    ("depth_rung", "rung"),
    ("solved_by", "runs solving it"),
)


def _task_rows(frame: pl.DataFrame, runs: list[str]) -> list[dict[str, Any]]:
    """One row per task: its cell, its rung, and each run's success over its episodes of it
    (``run:<name>``: a share, null when the run did not play it)."""
    keys = ["release", "task_id", "domain", "hidden_slots", "decoy_budget"]
    if not frame.height:
        return []
    per_run = frame.group_by([*keys, "run"]).agg(
        pl.col("success").cast(pl.Float64).mean().alias("rate"), pl.col("depth_rung").drop_nulls().first()
    )
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in per_run.sort([*keys, "run"]).iter_rows(named=True):
        key = tuple(record[k] for k in keys)
        row = rows.setdefault(key, {**{k: record[k] for k in keys}, "depth_rung": None, "solved_by": 0})
        row["depth_rung"] = row["depth_rung"] or record["depth_rung"]
        row[f"run:{record['run']}"] = record["rate"]
        row["solved_by"] += record["rate"] == 1.0
    return list(rows.values())


def _listing(counts: dict[str, int]) -> str:
    return ", ".join(f"{run}: {n}" for run, n in counts.items())


def _has(frame: pl.DataFrame, run: str, rate: float) -> bool:
    return frame.filter((pl.col("run") == run) & (pl.col("failure_rate") == rate)).height > 0


def _heatmap(frame: pl.DataFrame, run: str, rate: float) -> dict[str, Any]:
    """Success per (H, B) of one run at one failure rate, with Wilson intervals and n."""
    part = frame.filter((pl.col("run") == run) & (pl.col("failure_rate") == rate))
    table = part.group_by(["hidden_slots", "decoy_budget"]).agg(
        pl.col("success").cast(pl.Float64).sum().alias("wins"), pl.len().alias("n")
    )
    cells = {}
    for h, b, wins, n in table.sort(["hidden_slots", "decoy_budget"]).iter_rows():
        low, high = wilson(float(wins), int(n))
        cells[f"{h},{b}"] = {"rate": float(wins) / n, "low": low, "high": high, "n": int(n)}
    wins = float(part["success"].cast(pl.Float64).sum())
    return {
        "run": run,
        "rate": f"{rate:g}",
        "n": part.height,
        "success": wins / part.height,
        "horizons": sorted(set(part["hidden_slots"].to_list())),
        "budgets": sorted(set(part["decoy_budget"].to_list())),
        "cells": cells,
    }


def transcript_record(data: bytes) -> Any:
    """The record of an embedded transcript (for tests): base64 gzip JSON."""
    return json.loads(gzip.decompress(base64.b64decode(data)))
