"""Reading a release: its manifest (checked for shape), and its tasks with their answers."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.task import Answer, Task
from gridbench_core.task_io import answer_from_dict, task_from_dict
from pipeline.storage.layout import RELEASE_FORMAT
from pipeline.storage.safe import ReleaseError, checked_relative, load_json, read_bytes, read_json

DIGEST = re.compile(r"^[0-9a-f]{64}\Z")


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the release at ``path``; a folder without one is not a release, and a
    manifest of the wrong shape is refused, naming what is wrong."""
    require_manifest(path)
    manifest = read_json(path, "manifest.json")
    if not isinstance(manifest, dict):
        raise ReleaseError(f"{path}/manifest.json: must be a JSON object, got {type(manifest).__name__}")
    if manifest.get("format") != RELEASE_FORMAT:
        raise ReleaseError(
            f"{path}/manifest.json: release format {str(manifest.get('format'))[:40]!r} "
            f"is not known; this code reads {RELEASE_FORMAT!r}"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ReleaseError(f"{path}/manifest.json: 'files' must map each file to its SHA-256")
    for relative, digest in files.items():
        checked_relative(relative)
        if not isinstance(digest, str) or not DIGEST.match(digest):
            raise ReleaseError(f"{path}/manifest.json: the digest of {relative} is not a SHA-256")
    counts = manifest.get("counts")
    if not isinstance(counts, dict) or not isinstance(counts.get("tasks"), int):
        raise ReleaseError(f"{path}/manifest.json: 'counts.tasks' must be an integer")
    return manifest


def shown(path: Any, limit: int = 200) -> str:
    """A path as an error message shows it: control characters escaped, cut to ``limit``."""
    text = str(path)
    text = text if text.isprintable() else repr(text)[1:-1]
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def require_manifest(path: Path) -> None:
    """Refuse ``path`` unless it holds a manifest (:func:`has_manifest`): a folder without one
    is not a release."""
    if not has_manifest(path):
        raise ReleaseError(
            f"{shown(path)} is not a release (no manifest.json); pass release=PATH to a "
            "folder written by `make release`"
        )


def has_manifest(path: Path) -> bool:
    """Whether ``path`` is a folder holding an entry named ``manifest.json`` (of any kind: a
    FIFO or a link is refused later, when it is read); a path the system cannot even look
    at (too long, a NUL, a loop) is refused here, with one line."""
    text = str(path)
    if "\0" in text or len(text) > 4096:
        raise ReleaseError(f"{shown(path)}: not a usable path (a NUL byte, or longer than 4096 characters)")
    try:
        return path.is_dir() and os.path.lexists(path / "manifest.json")
    except OSError as error:  # a name too long for the file system, a loop of links, ...
        raise ReleaseError(f"{shown(path)}: cannot be read ({error.strerror})") from None


def read_listed(release: Path, relative: str) -> bytes:
    """A file of the release, whose SHA-256 must be the one its manifest lists: a file
    changed after the build (an answer edited, a truth swapped) is refused, naming it, where
    it would otherwise be scored, audited or played as if it were the release."""
    data = read_bytes(release, relative)
    expected = _listed(release).get(relative)
    if expected is None:
        raise ReleaseError(
            f"{shown(release)}/{relative}: not listed in the release's manifest (run make verify)"
        )
    if hashlib.sha256(data).hexdigest() != expected:
        raise ReleaseError(
            f"{shown(release)}/{relative}: its SHA-256 is not the one the manifest lists: the file "
            "changed after the release was built; `make verify` says what changed (or rebuild it)"
        )
    return data


def read_listed_json(release: Path, relative: str) -> Any:
    """:func:`read_listed`, parsed under ``read_json``'s limits."""
    return load_json(read_listed(release, relative), relative)


def _listed(release: Path) -> dict[str, str]:
    """The manifest's digests, read once for each state of the manifest file."""
    try:
        state = os.stat(Path(release) / "manifest.json")
    except OSError:
        return dict(read_manifest(release)["files"])  # says why it cannot be read
    return _listed_at(Path(release), state.st_mtime_ns, state.st_size, state.st_ino)


@functools.lru_cache(maxsize=64)
def _listed_at(release: Path, mtime_ns: int, size: int, inode: int) -> dict[str, str]:
    return dict(read_manifest(release)["files"])


def read_metadata_table(release: Path) -> Any:
    """The release's ``metadata.parquet`` as a pyarrow Table: its digest the manifest's, its
    memory bounded while it is decoded, its columns the declared ones -- a file changed after
    the build, a FIFO, garbage or a bomb is one line naming it, never a traceback or a hang."""
    from pipeline.storage.metadata import METADATA_SCHEMA
    from pipeline.storage.parquet import read_arrow_table

    release = Path(release)
    table = read_arrow_table(read_listed(release, "metadata.parquet"), f"{release.name}/metadata.parquet")
    found = {field.name: str(field.type) for field in table.schema}
    if list(found) != list(METADATA_SCHEMA) or any(
        found[name] not in _ARROW_TYPES[str(dtype)] for name, dtype in METADATA_SCHEMA.items()
    ):
        raise ReleaseError(
            f"{release}/metadata.parquet: its columns are not the declared ones (run `make verify`)"
        )
    return table


def read_metadata(release: Path) -> Any:
    """:func:`read_metadata_table` as a polars DataFrame."""
    import polars as pl

    return pl.from_arrow(read_metadata_table(release))


def release_pairs(release: Path) -> list[tuple[Task, Answer]]:
    """Every (task, answer) of a release, in file order (each file's digest checked)."""
    manifest = read_manifest(release)
    pairs = []
    for relative in sorted(name for name in manifest["files"] if name.startswith("tasks/")):
        task = task_from_dict(read_listed_json(release, relative))
        answer = answer_from_dict(read_listed_json(release, "answers/" + relative[len("tasks/") :]))
        pairs.append((task, answer))
    return pairs


@dataclass(frozen=True)
class ReleaseRecord:
    """One task of a release: ``task`` and ``answer`` are the dicts of its two files."""

    release: Path
    task_file: str
    domain: str
    task_id: str
    hidden_slots: int
    decoy_budget: int

    @property
    def task(self) -> dict[str, Any]:
        """The task file, as a dict (a fresh copy: change it freely)."""
        return self._file(self.task_file)

    @property
    def answer(self) -> dict[str, Any]:
        """The answer file, as a dict (a fresh copy: change it freely)."""
        return self._file("answers/" + self.task_file[len("tasks/") :])

    def _file(self, relative: str) -> dict[str, Any]:
        value = json.loads(_checked_bytes(self.release, relative))  # a fresh copy each time
        if not isinstance(value, dict) or value.get("task_id") != self.task_id:
            raise ReleaseError(
                f"{self.release}/{relative}: does not hold task {self.task_id} (run `make verify`)"
            )
        if relative.startswith("tasks/") and value.get("domain") != self.domain:
            raise ReleaseError(f"{self.release}/{relative}: is not a {self.domain} task (run `make verify`)")
        return value


@functools.lru_cache(maxsize=1024)
def _checked_bytes(release: Path, relative: str) -> bytes:
    """A file's bytes, once they have passed the size and depth limits of ``read_json``
    (parsing bytes again is cheaper than copying the parsed value)."""
    data = read_listed(release, relative)
    load_json(data, relative)
    return data


class Release:
    """A release on disk: ``len()``, iteration, indexing and filtering over its tasks, read
    lazily (the index comes from ``metadata.parquet``; files are read when asked for).
    ``record_class`` is the class of its records (the public face's opens episodes)."""

    record_class: type[ReleaseRecord] = ReleaseRecord

    def __init__(self, path: str | Path, records: list[ReleaseRecord] | None = None) -> None:
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.records = records if records is not None else self._index()

    def _index(self) -> list[ReleaseRecord]:
        # pyarrow alone, no polars: a gymnasium async vector env builds each environment in a
        # forked worker, and polars used in the parent before the fork hangs there
        table = read_metadata_table(self.path)
        columns = ("domain", "hidden_slots", "decoy_budget", "task_id")
        rows = table.select(list(columns)).to_pylist()
        if any(row[name] is None for row in rows for name in columns):
            raise ReleaseError(
                f"{self.path}/metadata.parquet: a task's {columns} has a null (run `make verify`)"
            )
        listed = self.manifest["files"]
        records = []
        for row in sorted(rows, key=lambda row: tuple(row[name] for name in columns)):
            task_file = f"tasks/{row['domain']}/{row['task_id']}.json"
            if task_file not in listed:
                raise ReleaseError(
                    f"{self.path}/metadata.parquet lists {task_file}, which the manifest does not"
                )
            records.append(
                self.record_class(
                    self.path,
                    task_file,
                    row["domain"],
                    row["task_id"],
                    row["hidden_slots"],
                    row["decoy_budget"],
                )
            )
        return records

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[ReleaseRecord]:
        return iter(self.records)

    def __getitem__(self, index: int | str) -> ReleaseRecord:
        if isinstance(index, str):
            for record in self.records:
                if record.task_id == index:
                    return record
            raise KeyError(f"no task {index!r} in {self.path.name}")
        return self.records[index]

    def filter(
        self,
        domains: str | Iterable[str] | None = None,
        hidden_slots: int | Iterable[int] | None = None,
        decoy_budgets: int | Iterable[int] | None = None,
    ) -> Release:
        """The tasks with those domains, H and B: a value or an iterable of values each (None
        keeps every value)."""
        wanted_domains = _choices(domains, str, "domains")
        wanted_h = _choices(hidden_slots, int, "hidden_slots")
        wanted_b = _choices(decoy_budgets, int, "decoy_budgets")
        keep = [
            r
            for r in self.records
            if (wanted_domains is None or r.domain in wanted_domains)
            and (wanted_h is None or r.hidden_slots in wanted_h)
            and (wanted_b is None or r.decoy_budget in wanted_b)
        ]
        return type(self)(self.path, keep)

    def __repr__(self) -> str:
        return f"Release({str(self.path)!r}, {len(self)} tasks)"


def _choices(value: Any, kind: type, name: str) -> set[Any] | None:
    """A filter's values as a set (a single value, or any iterable read once), or None."""
    if value is None:
        return None
    values = [value] if isinstance(value, kind) else value
    try:
        chosen = set(values)
    except TypeError:
        raise UserError(f"{name}={value!r}: give a {kind.__name__} or a list of them") from None
    if not all(isinstance(v, kind) and not isinstance(v, bool) for v in chosen):
        raise UserError(f"{name}={value!r}: give a {kind.__name__} or a list of them")
    return chosen


# the Arrow types a metadata column of each polars type may have been written as
_ARROW_TYPES = {
    "String": ("string", "large_string", "string_view"),
    "Int64": ("int64",),
    "Float64": ("double",),
    "Boolean": ("bool",),
}


def load_release(path: str | Path) -> Release:
    """Open the release at ``path`` (its manifest is checked; files are read lazily)."""
    if not isinstance(path, str | Path):
        raise UserError(f"load_release: pass the release folder's path, got {type(path).__name__}")
    return Release(path)
