"""Shared by the hostile suites: a tiny release, bombs (Parquet dictionary expansion, gzip,
deep JSON), commands run under a memory limit, one-line exits, and snapshots of a folder
tree (so that a test can say nothing changed outside the root)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import ROOT
from tests.helpers_release import compose_config

# Every bomb below needs gigabytes to decode (20 GB for the Parquet ones); the commands run
# under this address-space limit, an interpreter with polars, pyarrow and OR-Tools loaded
# needs about 1.2 GB of it.
MEMORY_LIMIT_MB = 2048
BOMB_ROWS, BOMB_VALUE = 20_000, 1024 * 1024  # 20,000 rows of one 1 MiB value: 20 GiB decoded


def tiny_overrides(root: Path, name: str = "tiny") -> list[str]:
    return [
        "release.domains=[toy,course]",
        "grid=5x5",
        "grid.hidden_slots=[2]",
        "grid.decoy_budgets=[0,3]",
        "grid.candidates_per_slot=6",
        f"release.name={name}",
        f"release.output_root={root}",
        f"release.cache_root={root}/cache-{name}",
        "release.workers=1",
    ]


def build_tiny(root: Path, name: str = "tiny") -> Path:
    """Four tasks (toy and course, H = 2, B = 0 and 3): enough for every claim a release makes."""
    from gridbench.commands.release import build

    assert build(compose_config(tiny_overrides(root, name))) == 0
    return root / f"{name}-v2.0.0"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time (links not followed)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            out[path.relative_to(root).as_posix()] = (info.st_size, info.st_mtime_ns)
    return out


def limited_env() -> dict[str, str]:
    """One thread per pool, so that the address space a run needs does not grow with the cores."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "POLARS_MAX_THREADS": "1",
        "RAYON_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
        "PYTHONPATH": str(ROOT),
    }


def run_limited(module: str, args: list[str], limit_mb: int = MEMORY_LIMIT_MB, timeout: float = 180):
    """``python -m module args`` under an address-space limit of ``limit_mb``; stderr ends with
    a line ``maxrss_mb N``: the peak resident memory the command reached."""
    code = (
        "import resource, runpy, sys\n"
        f"sys.argv = [{module!r}, *{args!r}]\n"
        "try:\n"
        f"    runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n"
        "finally:\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "    print(f'maxrss_mb {peak:.0f}', file=sys.stderr)\n"
    )
    return run_code_limited(code, limit_mb, timeout)


def run_code_limited(code: str, limit_mb: int = MEMORY_LIMIT_MB, timeout: float = 180):
    limit = limit_mb * 1024 * 1024

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=limited_env(),
        preexec_fn=cap,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def peak_mb(stderr: str) -> int:
    line = next(line for line in reversed(stderr.splitlines()) if line.startswith("maxrss_mb "))
    return int(line.split()[1])


def dictionary_bomb(
    path: Path, schema: Any, column: str, rows: int = BOMB_ROWS, size: int = BOMB_VALUE
) -> None:
    """A Parquet file of ``schema`` whose ``column`` holds one ``size``-character value in each
    of ``rows`` rows, dictionary-encoded (the value is stored once: kilobytes on disk,
    ``rows * size`` bytes decoded); every other column is null. Written without the Arrow
    schema, so that a reader decodes the column to plain strings."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    value = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["x" * size]))
    columns = [value if field.name == column else pa.nulls(rows, field.type) for field in schema]
    table = pa.Table.from_arrays(
        columns, schema=pa.schema([*schema]).set(schema.get_field_index(column), pa.field(column, value.type))
    )
    pq.write_table(table, path, compression="zstd", store_schema=False)


def gzip_bomb(path: Path, megabytes: int = 1024) -> None:
    """A gzip file of a JSON transcript whose text is ``megabytes`` MiB of one letter."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    chunk = b"a" * (1024 * 1024)
    parts = [packer.compress(b'{"episode_id": "x", "task_id": "x", "transcript": ["')]
    parts += [packer.compress(chunk) for _ in range(megabytes)]
    parts += [packer.compress(b'"]}'), packer.flush()]
    path.write_bytes(b"".join(parts))


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def exit_of(main: Any, argv: list[str], capsys: Any, monkeypatch: Any) -> tuple[int, str]:
    """Run a command's ``main`` in this process with ``argv``: (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["command", *argv])
    with pytest.raises(SystemExit) as stop:
        main()
    return int(stop.value.code or 0), capsys.readouterr().err


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (a FIFO read blocks for ever)."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds}s: it hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes in a file fail, as on a full disk (the kernel's EFBIG:
    ``RLIMIT_FSIZE``, with SIGXFSZ ignored so that the write returns the error)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


# A Parquet page bomb whose footer understates what its pages hold -------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


class _Thrift:
    """Just enough of Thrift's compact protocol to write a Parquet footer and page headers."""

    def __init__(self) -> None:
        self.out, self.last = bytearray(), [0]

    def field(self, fid: int, kind: int) -> None:
        delta = fid - self.last[-1]
        self.out += bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(fid)
        self.last[-1] = fid

    def i32(self, fid: int, value: int) -> None:
        self.field(fid, 5)
        self.out += _zigzag(value)

    def i64(self, fid: int, value: int) -> None:
        self.field(fid, 6)
        self.out += _zigzag(value)

    def binary(self, fid: int, value: bytes) -> None:
        self.field(fid, 8)
        self.out += _varint(len(value)) + value

    def begin(self, fid: int) -> None:
        self.field(fid, 12)
        self.last.append(0)

    def end(self) -> None:
        self.out.append(0)
        self.last.pop()

    def list(self, fid: int, kind: int, size: int) -> None:
        self.field(fid, 9)
        self.out += bytes([(size << 4) | kind]) if size < 15 else bytes([0xF0 | kind]) + _varint(size)


def page_bomb(pages: int = 64, page_bytes: int = 4 * 1024 * 1024) -> bytes:
    """A Parquet file of one required string column: ``pages`` gzip pages, each one value of
    ``page_bytes`` letters (kilobytes once compressed, the same page written again and
    again), whose footer claims the column and the row group hold only what is on disk.
    Only the page headers say what the pages decompress to."""
    import gzip

    value = b"a" * (page_bytes - 4)
    packed = gzip.compress(len(value).to_bytes(4, "little") + value, compresslevel=9, mtime=0)
    header = _Thrift()
    header.i32(1, 0)  # DATA_PAGE
    header.i32(2, page_bytes)  # uncompressed: the truth
    header.i32(3, len(packed))
    header.begin(5)
    header.i32(1, 1)  # one value
    header.i32(2, 0)  # PLAIN
    header.i32(3, 3)
    header.i32(4, 3)
    header.end()
    header.out.append(0)
    page = bytes(header.out) + packed
    body = page * pages
    footer = _Thrift()
    footer.i32(1, 1)
    footer.list(2, 12, 2)  # the schema: the root and one leaf
    footer.last.append(0)
    footer.binary(4, b"schema")
    footer.i32(5, 1)
    footer.end()
    footer.last.append(0)
    footer.i32(1, 6)  # BYTE_ARRAY
    footer.i32(3, 0)  # REQUIRED
    footer.binary(4, b"x")
    footer.i32(6, 0)  # UTF8
    footer.end()
    footer.i64(3, pages)
    footer.list(4, 12, 1)  # one row group
    footer.last.append(0)
    footer.list(1, 12, 1)  # one column chunk
    footer.last.append(0)
    footer.i64(2, 4)
    footer.begin(3)  # its metadata: the understatement
    footer.i32(1, 6)
    footer.list(2, 5, 1)
    footer.out += _zigzag(0)
    footer.list(3, 8, 1)
    footer.out += _varint(1) + b"x"
    footer.i32(4, 2)  # GZIP
    footer.i64(5, pages)
    footer.i64(6, len(body))  # total_uncompressed_size: what is on disk, a lie
    footer.i64(7, len(body))
    footer.i64(9, 4)  # data_page_offset
    footer.end()
    footer.end()
    footer.i64(2, len(body))  # the row group's total_byte_size: the same lie
    footer.i64(3, pages)
    footer.end()
    footer.end()
    meta = bytes(footer.out)
    return b"PAR1" + body + meta + len(meta).to_bytes(4, "little") + b"PAR1"
