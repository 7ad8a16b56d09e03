"""Reading an untrusted Parquet file with memory bounded before any value is decoded.

A Parquet file can claim anything in its footer, and a few kilobytes of one dictionary-encoded
value repeated in every row decode to gigabytes. So the page sizes are read from the page
headers themselves (what the reader will allocate), the values are counted from the footer, and
the decoded size is measured on the columns read with their dictionaries kept; a file beyond
:data:`MAX_TABLE_EXPANSION` times its size, or with more than :data:`MAX_TABLE_VALUES_PER_BYTE`
values per byte, is refused with one line naming it before anything is decoded.
"""

from __future__ import annotations

from typing import Any

from pipeline.storage.safe import ReleaseError

MAX_TABLE_EXPANSION = 64  # uncompressed (and decoded) / compressed size a table may reach
MAX_TABLE_VALUES_PER_BYTE = 4  # values a table may hold per byte (a release's tables: about 0.5)


def read_table_rows(data: bytes, relative: str, schema: Any = None) -> list[dict[str, Any]]:
    """The rows of an untrusted Parquet file, read within the bounds of :func:`read_arrow_table`."""
    return read_arrow_table(data, relative, schema).to_pylist()


def _no_side_channel(handle: Any, relative: str) -> None:
    """Refuse key-value metadata beyond the Arrow schema Arrow itself writes, and metadata on
    the schema or any field: the writers put none, and a table an agent reads (or the hub
    uploads) must not carry data beside its rows (hostile round 7 put every answer file there,
    in a task table that verified)."""
    extra = sorted(set(handle.metadata.metadata or {}) - {b"ARROW:schema"})
    if extra:
        name = extra[0].decode("utf-8", "replace")[:40]
        raise ReleaseError(
            f"{relative}: carries key-value metadata ({name!r}) that no release table has; rebuild the "
            "release (or take it from its source again)"
        )
    arrow = handle.schema_arrow
    fields = list(arrow)
    while fields:
        field = fields.pop()
        if field.metadata:
            raise ReleaseError(
                f"{relative}: column {field.name[:40]!r} carries metadata that no release table has"
            )
        fields.extend(field.type.field(i) for i in range(field.type.num_fields))  # nested
    if arrow.metadata:
        raise ReleaseError(f"{relative}: its schema carries metadata that no release table has")


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
        # pre_buffer off: bytes in memory gain nothing from it, and it starts Arrow's I/O pool,
        # a thread that can still run at interpreter exit ('terminate called without an active
        # exception', an abort one CI run met in a command that read a release)
        handle = pq.ParquetFile(io.BytesIO(data), pre_buffer=False)
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
        _no_side_channel(handle, relative)
        if schema is not None and not handle.schema_arrow.equals(schema):
            found = ", ".join(f"{f.name}: {f.type}" for f in handle.schema_arrow)[:300]
            raise ReleaseError(f"{relative}: its columns are not the declared ones (found {found})")
        leaves = [handle.schema.column(i).path for i in range(len(handle.schema))]
        encoded = pq.ParquetFile(io.BytesIO(data), read_dictionary=leaves, pre_buffer=False)
        decoded = 0
        for group in range(meta.num_row_groups):  # one at a time: Arrow reads nested columns
            # with their dictionaries kept only within one row group (a legitimate file
            # written with many, even one row each, is read like any other)
            part = encoded.read_row_group(group, use_threads=False)
            decoded += sum(_decoded_bytes(chunk) for column in part.columns for chunk in column.chunks)
            del part
            if decoded > allowance:
                break
        if decoded > allowance:
            raise ReleaseError(
                f"{relative}: its values decode to {decoded} bytes (dictionary expansion), which is refused"
            )
        return handle.read(use_threads=False)  # no pool thread left running at exit
    except ReleaseError:
        raise
    except Exception as error:  # pyarrow raises several kinds for a damaged file
        raise ReleaseError(f"{relative}: unreadable Parquet ({type(error).__name__})") from None


def _decoded_bytes(array: Any) -> int:
    """What ``array`` takes once its dictionaries are decoded, computed on the encoded
    array: a dictionary value counts once per index that uses it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.DictionaryArray):
        dictionary = array.dictionary
        if not (pa.types.is_string(dictionary.type) or pa.types.is_binary(dictionary.type)):
            return len(array) * max(dictionary.type.bit_width // 8, 1)
        # in Arrow, not numpy: an array's to_numpy with nulls imports pandas (0.7 s a process)
        used = pc.sum(pc.take(pc.binary_length(dictionary), array.indices)).as_py()
        return int(used or 0) + 4 * (len(array) + 1)
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
