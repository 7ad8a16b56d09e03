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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gridbench.errors import UserError

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TABLE_BYTES = 4 * 1024 * 1024 * 1024  # a Parquet table of a very large release
MAX_TABLE_EXPANSION = 64  # uncompressed (and decoded) / compressed size a table may reach
MAX_TABLE_VALUES_PER_BYTE = 4  # values a table may hold per byte (a release's tables: about 0.5)
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
    containers = data.count(b"[") + data.count(b"{") if isinstance(data, bytes) else 0
    if containers > len(data) // 8 + 1_000_000:  # a file: about 1 in 50 bytes; "[[],[],..." 1 in 3
        raise ReleaseError(
            f"{where}: JSON of {containers} arrays and objects in {len(data)} bytes, which is refused"
        )
    try:
        value = json.loads(data)
    except RecursionError:
        raise ReleaseError(deep) from None
    except MemoryError:
        raise ReleaseError(f"{where}: JSON too large to parse in this process's memory") from None
    except ValueError as error:
        raise ReleaseError(f"{where}: not valid JSON ({str(error)[:120]})") from None
    if json_depth(value) > max_depth:
        raise ReleaseError(deep)
    return value


def read_json(root: Path, relative: str) -> Any:
    """The parsed JSON of the regular file ``relative`` under ``root``, within the size and depth limits."""
    return load_json(read_bytes(root, relative), relative)


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
    import unicodedata

    if len(text) > limit:
        return f"{len(text)} characters (at most {limit})"
    for char in text:
        if char in BIDI:
            return f"a bidirectional control character U+{ord(char):04X}"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            return f"a control or invisible character U+{ord(char):04X}"
    return ""


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
    """The rows of an untrusted Parquet file, read within the bounds of :func:`read_arrow_table`."""
    return read_arrow_table(data, relative, schema).to_pylist()


def read_arrow_table(data: bytes, relative: str, schema: Any = None) -> Any:
    """An untrusted Parquet file as a pyarrow Table, its memory bounded before any value is
    decoded. Refused, each with one line naming ``relative``: a file whose pages (read from
    their own headers, not from the footer's claims) decompress to more than
    :data:`MAX_TABLE_EXPANSION` times its size; one that holds more values than
    :data:`MAX_TABLE_VALUES_PER_BYTE` per byte; one whose dictionary-encoded values would
    expand (a single long value repeated in every row: kilobytes on disk, gigabytes decoded)
    beyond :data:`MAX_TABLE_EXPANSION` times its size; and, when ``schema`` is given, one
    whose Arrow schema is not ``schema`` (no extra, missing, reordered or retyped column)."""
    import io

    import pyarrow.parquet as pq

    allowance = MAX_TABLE_EXPANSION * max(len(data), 1024 * 1024)
    try:
        handle = pq.ParquetFile(io.BytesIO(data))
        meta = handle.metadata
        chunks = [
            meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)
        ]
        values = sum(chunk.num_values for chunk in chunks)
        if values > MAX_TABLE_VALUES_PER_BYTE * max(len(data), 256 * 1024):
            raise ReleaseError(f"{relative}: declares {values} values in {len(data)} bytes, which is refused")
        declared = max(
            sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)),
            sum(chunk.total_uncompressed_size for chunk in chunks),
            sum(_page_bytes(data, chunk, relative) for chunk in chunks),
        )
        if declared > allowance:
            raise ReleaseError(f"{relative}: declares {declared} bytes uncompressed, which is refused")
        if schema is not None and not handle.schema_arrow.equals(schema):
            found = ", ".join(f"{f.name}: {f.type}" for f in handle.schema_arrow)[:300]
            raise ReleaseError(f"{relative}: its columns are not the declared ones (found {found})")
        leaves = [handle.schema.column(i).path for i in range(len(handle.schema))]
        encoded = pq.ParquetFile(io.BytesIO(data), read_dictionary=leaves).read()
        decoded = sum(_decoded_bytes(chunk) for column in encoded.columns for chunk in column.chunks)
        del encoded
        if decoded > allowance:
            raise ReleaseError(
                f"{relative}: its values decode to {decoded} bytes (dictionary expansion), which is refused"
            )
        return handle.read()
    except ReleaseError:
        raise
    except Exception as error:  # pyarrow raises several kinds for a damaged file
        raise ReleaseError(f"{relative}: unreadable Parquet ({type(error).__name__})") from None


def _decoded_bytes(array: Any) -> int:
    """What ``array`` takes once its dictionaries are decoded, computed on the encoded
    array: a dictionary value counts once per index that uses it."""
    import numpy as np
    import pyarrow as pa

    if isinstance(array, pa.DictionaryArray):
        dictionary = array.dictionary
        if not (pa.types.is_string(dictionary.type) or pa.types.is_binary(dictionary.type)):
            return len(array) * max(dictionary.type.bit_width // 8, 1)
        offsets = np.frombuffer(dictionary.buffers()[1], dtype=np.int32)
        offsets = offsets[dictionary.offset : dictionary.offset + len(dictionary) + 1]
        lengths = np.diff(offsets).astype(np.int64)
        indices = array.indices.to_numpy(zero_copy_only=False)
        if indices.dtype.kind == "f":  # nulls: no bytes
            indices = indices[~np.isnan(indices)].astype(np.int64)
        return int(lengths[indices].sum()) + 4 * (len(array) + 1)
    if isinstance(array, pa.ListArray | pa.LargeListArray):
        return 8 * (len(array) + 1) + _decoded_bytes(array.flatten())
    if isinstance(array, pa.StructArray):
        return len(array) + sum(_decoded_bytes(child) for child in array.flatten())
    return int(array.nbytes)


class _Compact:
    """Just enough of Thrift's compact protocol to read a Parquet page header: each field is
    skipped except the sizes, so that no claim of the file is taken on trust."""

    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position = data, position

    def byte(self) -> int:
        value = self.data[self.position]  # an IndexError past the end: a damaged file
        self.position += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            value = self.byte()
            result |= (value & 0x7F) << shift
            if not value & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 16:
            raise ValueError("page header nested too deep")
        if kind in (1, 2):  # a boolean held in the field header
            return
        if kind == 3:
            self.position += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.position += 8
        elif kind == 8:
            size = self.varint()  # read first: ``+=`` would take the position before it
            self.position += size
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(size):
                self.skip(head & 0x0F if head & 0x0F not in (1, 2) else 3, depth + 1)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1)
                self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")

    def struct(self, depth: int = 0) -> dict[int, int]:
        """The integer fields of a struct by id (others skipped)."""
        fields: dict[int, int] = {}
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == 0:
                return fields
            last = last + (head >> 4) if head >> 4 else self.zigzag()
            if kind in (5, 6) and depth == 0:
                fields[last] = self.zigzag()
            else:
                self.skip(kind, depth)


MAX_PAGES = 1_000_000


def _page_bytes(data: bytes, chunk: Any, relative: str) -> int:
    """The uncompressed size of every page of a column chunk, from the page headers
    themselves (what the reader will allocate), walking from the first page to the end of
    the chunk."""
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end = start + chunk.total_compressed_size
    if not 0 <= start <= end <= len(data):
        raise ReleaseError(f"{relative}: a column chunk lies outside the file")
    position, total, pages = start, 0, 0
    while position < end:
        reader = _Compact(data, position)
        header = reader.struct()
        uncompressed, compressed = header.get(2, -1), header.get(3, -1)
        if uncompressed < 0 or compressed < 0:
            raise ReleaseError(f"{relative}: a page header without valid sizes")
        total += uncompressed
        position = reader.position + compressed
        pages += 1
        if pages > MAX_PAGES:
            raise ReleaseError(f"{relative}: more than {MAX_PAGES} pages")
    return total
