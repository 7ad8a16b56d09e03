"""Reading files that came from elsewhere: a release is hostile input until verified.

Paths listed by a manifest must be relative, stay inside the release and name regular files
(never a symlink, a FIFO or a device); files are read with a size limit and JSON is parsed
with a nesting limit, so that no file can hang, exhaust or crash the reader. Every refusal
is a :class:`ReleaseError` whose message names the file and the reason.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench_core.errors import UserError

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TABLE_BYTES = 4 * 1024 * 1024 * 1024  # a Parquet table of a very large release
MAX_JSON_DEPTH = 64
MAX_GZIP_BYTES = 32 * 1024 * 1024  # a transcript, decompressed


class ReleaseError(UserError):
    """A release cannot be written or read; the message names the path and the fix."""


def checked_relative(relative: Any) -> str:
    """A manifest path: a relative POSIX path without ``..``, empty or special parts."""
    if not isinstance(relative, str) or not relative or len(relative) > 512:
        raise ReleaseError(f"{str(relative)[:80]!r}: a listed path must be a short relative string")
    parts = relative.split("/")
    if relative.startswith(("/", "\\")) or ":" in parts[0] or "\\" in relative:
        raise ReleaseError(f"{ascii(relative[:200])}: absolute paths are refused")
    if any(part in ("", ".", "..") for part in parts) or "\0" in relative:
        raise ReleaseError(f"{ascii(relative[:200])}: the path leaves the release or is not normal")
    unsafe = unsafe_text(relative, 512)
    if unsafe:
        raise ReleaseError(f"{ascii(relative[:200])}: a listed path holds {unsafe}, which is refused")
    return relative


def regular_file(root: Path, relative: str) -> Path:
    """``root/relative`` when every part of it is a plain folder or file (no symlink)."""
    path = root
    for part in checked_relative(relative).split("/"):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise ReleaseError(f"{relative}: missing") from None
        except OSError as error:  # a name too long, a file where a folder should be, ...
            raise ReleaseError(f"{relative[:200]}: cannot be read ({error.strerror})") from None
        if stat.S_ISLNK(mode):
            raise ReleaseError(f"{relative}: is or passes through a symlink, which is refused")
    if not stat.S_ISREG(mode):
        raise ReleaseError(f"{relative}: not a regular file (a FIFO, device or folder)")
    return path


def read_bytes(root: Path, relative: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file inside ``root``, at most ``limit`` of them (by default
    :data:`MAX_TABLE_BYTES` for a Parquet table, :data:`MAX_FILE_BYTES` for anything else)."""
    if limit is None:
        limit = MAX_TABLE_BYTES if relative.endswith(".parquet") else MAX_FILE_BYTES
    path = regular_file(root, relative)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:  # swapped for a symlink after the check, or unreadable
        raise ReleaseError(f"{relative[:200]}: cannot be read ({error.strerror})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):  # swapped after the check
            raise ReleaseError(f"{relative}: not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            # read what the file holds, never a buffer of ``limit`` (4 GiB for a table)
            data = handle.read(min(status.st_size, limit) + 1)
            if len(data) > status.st_size and len(data) <= limit:  # it grew meanwhile
                data += handle.read(limit + 1 - len(data))
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise ReleaseError(f"{relative}: larger than {limit} bytes, which is refused")
    pin = _PINNED.get()
    if pin is not None and pin.root == str(root) and relative in pin.digests:
        if hashlib.sha256(data).hexdigest() != pin.digests[relative]:
            message = (
                f"{relative}: changed while verify read it (its bytes are no longer those of "
                "the manifest's digest); verify the release again once nothing writes to it"
            )
            pin.changed.append(message)  # said even where a reader skips what it cannot read
            raise ReleaseError(message)
    return data


@dataclass
class Pin:
    """What a :func:`pinned` block holds: the digests its reads must match, and the reads
    that did not (each a failure line, whatever the reader did with the error)."""

    root: str
    digests: Mapping[str, str]
    changed: list[str]

    def failures(self, already: list[str]) -> list[str]:
        """The changed reads not among ``already`` (each once)."""
        return [line for line in dict.fromkeys(self.changed) if line not in already]


# the digests every read under a root must match (None outside a :func:`pinned` block)
_PINNED: contextvars.ContextVar[Pin | None] = contextvars.ContextVar("pinned", default=None)


@contextlib.contextmanager
def pinned(root: Path, digests: Mapping[str, str]) -> Iterator[Pin]:
    """Inside the block, a read of a file ``digests`` lists (relative to ``root``) must give
    the bytes of that digest, or fails: verify judges the bytes its manifest names, never a
    file changed between its digest check and a later read (its proofs run in other processes
    beside its checks, each read at its own moment). Every such read is also kept in the
    :class:`Pin` the block gives, so that a check that skips a file it cannot read (the
    table's own check names why) cannot turn a change into a pass."""
    pin = Pin(str(root), digests, [])
    token = _PINNED.set(pin)
    try:
        yield pin
    finally:
        _PINNED.reset(token)


def json_depth(value: Any) -> int:
    """The deepest nesting of arrays and objects in a parsed JSON value, without recursion
    (4x faster than scanning the bytes, which parsing has done already)."""
    if not isinstance(value, dict | list):
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def load_json(data: bytes, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON that is no deeper than ``max_depth``; errors name ``where``. The C parser
    refuses nesting deeper than the interpreter's recursion limit (a RecursionError, caught);
    anything it accepts is then measured."""
    deep = f"{where}: JSON nested deeper than {max_depth} levels, which is refused"
    containers = data.count(b"[") + data.count(b"{") if isinstance(data, bytes) else 0
    if containers > len(data) // 8 + 1_000_000:  # a file: about 1 in 50 bytes; "[[],[],..." 1 in 3
        raise ReleaseError(
            f"{where}: JSON of {containers} arrays and objects in {len(data)} bytes, which is refused"
        )
    try:
        value = json.loads(data, object_pairs_hook=_distinct_keys)
    except RecursionError:
        raise ReleaseError(deep) from None
    except MemoryError:
        raise ReleaseError(f"{where}: JSON too large to parse in this process's memory") from None
    except ValueError as error:
        raise ReleaseError(f"{where}: not valid JSON ({str(error)[:120]})") from None
    if json_depth(value) > max_depth:
        raise ReleaseError(deep)
    return value


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct: one that names a key twice means what its reader
    makes of it (Python keeps the last value, other readers the first), which a file that is
    verified cannot be."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key[:40]!r} appears twice in one object")
            seen.add(key)
    return value


# the JSON a parsed_once block keeps, in source bytes; a parse can take ten times its text or
# more (a list of short strings), so this bounds memory to about a third of a gigabyte
PARSED_ONCE_BYTES = 32 * 1024 * 1024


@dataclass
class _Parsed:
    values: dict[tuple[str, str], Any]
    room: int  # source bytes still to keep


# the files parsed inside this context's :func:`parsed_once` block (None outside one)
_PARSED: contextvars.ContextVar[_Parsed | None] = contextvars.ContextVar("parsed", default=None)


@contextlib.contextmanager
def parsed_once(limit: int = PARSED_ONCE_BYTES) -> Iterator[None]:
    """Inside the block, :func:`read_json` reads and parses each file once and gives every
    later reader the same value, which its readers only read (verify's checks of the tables,
    of the metadata and of the card each read every task and answer file: three parses of
    each, a second of the default release's). It keeps files up to ``limit`` bytes of JSON in
    all (about 18 MB for the default release); past that a file is parsed at each read, so a
    very large release costs time, not more memory. A file that fails to parse fails each time."""
    outer = _PARSED.get()
    token = _PARSED.set(outer if outer is not None else _Parsed({}, limit))
    try:
        yield
    finally:
        _PARSED.reset(token)


def read_json(root: Path, relative: str) -> Any:
    """The parsed JSON of the regular file ``relative`` under ``root``, within the size and depth limits."""
    parsed = _PARSED.get()
    key = (str(root), relative)
    if parsed is not None and key in parsed.values:
        return parsed.values[key]
    data = read_bytes(root, relative)
    value = load_json(data, relative)
    if parsed is not None and len(data) <= parsed.room:
        parsed.values[key] = value
        parsed.room -= len(data)
    return value


def read_user_file(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a file a user named (a source file, a prompt template, a licence): a
    regular file (never a symlink, FIFO or device), at most ``limit`` bytes."""
    given = Path(path)
    if len(str(given)) > 4096:
        raise ReleaseError(f"{str(given)[:80]}...: a path of {len(str(given))} characters is refused")
    return read_bytes(given.parent, given.name, limit)


def read_lines(root: Path, relative: str, max_line: int = 1024 * 1024) -> Iterator[bytes]:
    """The lines of a regular file under ``root`` (a run's ``episodes.jsonl``), read one at a
    time: memory is bounded by ``max_line`` whatever the file's size; a longer line is
    skipped (it is not a row this code wrote)."""
    path = regular_file(root, relative)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise ReleaseError(f"{relative[:200]}: cannot be read ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ReleaseError(f"{relative}: not a regular file")
        while True:
            line = handle.readline(max_line + 1)
            if not line:
                return
            if len(line) > max_line:  # skip the rest of an overlong line
                while line and not line.endswith(b"\n"):
                    line = handle.readline(max_line + 1)
                continue
            yield line


def read_gzip_json(root: Path, relative: str, limit: int = MAX_GZIP_BYTES) -> Any:
    """The JSON of a gzip file under ``root`` (a transcript), decompressed no further than
    ``limit`` bytes: a gzip bomb is refused after ``limit`` bytes, never expanded."""
    import gzip
    import io
    import zlib

    packed = read_bytes(root, relative)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(packed)) as handle:
            text = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise ReleaseError(f"{relative}: not a readable gzip file ({str(error)[:80]})") from None
    if len(text) > limit:
        raise ReleaseError(f"{relative}: decompresses to more than {limit} bytes, which is refused")
    return load_json(text, relative)


def inside(root: Path, path: Path, what: str) -> Path:
    """``path`` resolved (symlinks, ``..``), refused with one line when it is not ``root`` or
    a folder below it (``root`` resolved too): a name a user gave may not leave its root."""
    try:
        base, target = root.resolve(), path.resolve()
    except (OSError, RuntimeError) as error:
        raise ReleaseError(f"{what}: cannot be resolved ({error})") from None
    if target != base and base not in target.parents:
        raise ReleaseError(f"{what}: {target} is outside {base}, which is refused")
    return target


# Text that is shown to people and models: printable, without direction overrides.
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe_text(text: str, limit: int) -> str:
    """Why ``text`` cannot be shown safely ("" when it can): longer than ``limit``
    characters, or holding a control character (terminal escapes included), a bidirectional
    override or another invisible formatting character."""
    if len(text) > limit:
        return f"{len(text)} characters (at most {limit})"
    if text.isascii() and text.isprintable():
        return ""  # printable ASCII holds none of them (nearly every word of a task: no scan)
    import unicodedata

    for char in text:
        if char in BIDI:
            return f"a bidirectional control character U+{ord(char):04X}"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            return f"a control or invisible character U+{ord(char):04X}"
    return ""


MAX_WALK_DEPTH = 32  # folders deep at most (a release's are three deep)


def walk(root: Path) -> tuple[set[str], list[str]]:
    """(regular files, problems) under ``root``: symlinks and special files are problems and
    are never entered or read; so is a folder nested deeper than :data:`MAX_WALK_DEPTH` (the
    walk is iterative: ``os.walk`` recursed, and 1,100 nested folders were a RecursionError)
    or one the system cannot list."""
    files: set[str] = set()
    problems: list[str] = []
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        base, depth = stack.pop()
        try:
            entries = sorted(os.scandir(base), key=lambda entry: entry.name)
        except OSError as error:
            problems.append(f"{base.relative_to(root).as_posix()}: cannot be listed ({error.strerror})")
            continue
        for entry in entries:
            path = base / entry.name
            relative = path.relative_to(root).as_posix()
            try:
                mode = os.lstat(path).st_mode
            except OSError as error:
                problems.append(f"{relative[:200]}: cannot be read ({error.strerror})")
                continue
            if stat.S_ISLNK(mode):
                problems.append(f"{relative}: a symlink, which a release may not hold")
            elif stat.S_ISREG(mode):
                files.add(relative)
            elif stat.S_ISDIR(mode):
                if depth + 1 >= MAX_WALK_DEPTH:
                    problems.append(
                        f"{relative[:200]}...: folders nested deeper than {MAX_WALK_DEPTH} levels"
                    )
                else:
                    stack.append((path, depth + 1))
            else:
                problems.append(f"{relative}: a special file (FIFO, socket or device)")
    return files, problems
