"""Every read of a file from elsewhere is bounded before it is decoded: Parquet by what it
decodes to (a few kilobytes of one dictionary-encoded value that decode to 20 GB), gzip by
what it decompresses to, JSON by size and depth; FIFOs, devices and links are refused before
any read, the manifest included, on the flat and the sharded path. The bombs run under a
memory limit far below what decoding them would take, and must end in one line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests.helpers_release import compose_config, copy_release
from tests.hostile import (
    MEMORY_LIMIT_MB,
    deadline,
    dictionary_bomb,
    gzip_bomb,
    peak_mb,
    run_code_limited,
    run_limited,
    snapshot,
)


@pytest.fixture
def tiny(tiny_release) -> Path:
    return tiny_release


def _table_schema(relative: str):
    import polars as pl

    from pipeline.storage.metadata import METADATA_SCHEMA
    from pipeline.storage.tables import ANSWER, schema_of, task_type

    if relative == "metadata.parquet":
        return pl.DataFrame(schema=METADATA_SCHEMA).to_arrow().schema, "task_id"
    if relative == "data/answers.parquet":
        return schema_of(ANSWER), "task_id"
    return schema_of(task_type(relative.rsplit("/", 1)[1][: -len(".parquet")])), "instruction"


def _resign(release: Path, relative: str) -> None:
    import hashlib

    manifest = json.loads((release / "manifest.json").read_text())
    manifest["files"][relative] = hashlib.sha256((release / relative).read_bytes()).hexdigest()
    (release / "manifest.json").write_text(json.dumps(manifest))


def _bombed(tiny: Path, target: Path, relative: str) -> Path:
    copy = copy_release(tiny, target)
    schema, column = _table_schema(relative)
    dictionary_bomb(copy / relative, schema, column)
    _resign(copy, relative)  # the manifest alone: re-signing by reading the bomb would decode it
    assert (copy / relative).stat().st_size < 64 * 1024  # kilobytes on disk, 20 GiB decoded
    return copy


BOMBED = ["data/tasks/toy.parquet", "data/answers.parquet", "metadata.parquet"]


@pytest.mark.parametrize("relative", BOMBED)
def test_a_dictionary_bomb_is_refused_before_it_is_decoded(relative, tiny, tmp_path):
    from pipeline.storage.parquet import read_arrow_table
    from pipeline.storage.safe import ReleaseError, read_bytes

    copy = _bombed(tiny, tmp_path / "copy", relative)
    schema, _ = _table_schema(relative)
    if relative == "metadata.parquet":
        schema = None  # its readers check polars' types after reading (as load_release does)
    # refused from what the file declares: its dictionary expansion, or (a table with many
    # nested columns, whose nulls alone count) more values than its bytes can hold
    with pytest.raises(ReleaseError, match=r"dictionary expansion|declares \d+ values"):
        read_arrow_table(read_bytes(copy, relative), relative, schema)


def test_a_table_of_a_billion_values_is_refused_from_its_footer(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.storage.parquet import read_arrow_table
    from pipeline.storage.safe import ReleaseError

    rows = 5_000_000  # every value the same: kilobytes on disk
    indices = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array([7]))
    pq.write_table(pa.table({"n": indices}), tmp_path / "t.parquet", store_schema=False)
    data = (tmp_path / "t.parquet").read_bytes()
    with pytest.raises(ReleaseError, match=f"declares {rows} values"):
        read_arrow_table(data, "t.parquet")


def test_damaged_page_headers_are_one_line(tiny):
    from pipeline.storage.parquet import read_arrow_table
    from pipeline.storage.safe import ReleaseError

    data = bytearray((tiny / "metadata.parquet").read_bytes())
    data[4:40] = b"\xff" * 36  # the first page header
    with pytest.raises(ReleaseError, match="metadata.parquet"):
        read_arrow_table(bytes(data), "metadata.parquet")


def test_verify_refuses_a_bombed_table_under_a_memory_limit(tiny, tmp_path):
    copy = _bombed(tiny, tmp_path / "copy", "data/tasks/toy.parquet")
    outside = snapshot(tmp_path)
    done = run_limited(
        "gridbench.commands.verify", [f"release={copy}", "verify.workers=1", f"hydra.run.dir={tmp_path}/h"]
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "dictionary expansion" in done.stderr and "Traceback" not in done.stderr
    assert "MemoryError" not in done.stderr and peak_mb(done.stderr) < MEMORY_LIMIT_MB
    assert {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("h")} == outside


def test_load_release_refuses_a_bombed_metadata_under_a_memory_limit(tiny, tmp_path):
    copy = _bombed(tiny, tmp_path / "copy", "metadata.parquet")
    code = (
        "import gridbench, resource, sys\n"
        "try:\n"
        f"    gridbench.load_release({str(copy)!r})\n"
        "except gridbench.UserError as error:\n"
        "    print('refused:', error)\n"
        "print('maxrss_mb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)\n"
    )
    done = run_code_limited(code)
    assert done.returncode == 0 and "refused:" in done.stdout and "dictionary expansion" in done.stdout
    assert peak_mb(done.stderr) < MEMORY_LIMIT_MB


def test_show_refuses_a_gzip_bomb_under_a_memory_limit(tmp_path):
    run = tmp_path / "runs" / "r" / "search"
    (run / "transcripts").mkdir(parents=True)
    episode = "0123456789abcdef"
    row = {"episode_id": episode, "task_id": "toy-1", "failure_rate": 0.0, "trial": 0}
    import polars as pl

    from pipeline.evaluation.runs import REQUIRED, RESULT_SCHEMA

    plain = {pl.Int64: 0, pl.Float64: 0.0, pl.Boolean: False}
    row.update({name: plain.get(RESULT_SCHEMA[name], "x") for name in REQUIRED if name not in row})
    (run / "episodes.jsonl").write_text(json.dumps(row) + "\n")
    gzip_bomb(run / "transcripts" / f"{episode}.json.gz", megabytes=512)  # 512 MiB of text
    done = run_limited("gridbench.commands.show", [f"run={run}", "task=toy-1"], limit_mb=1024)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "decompresses to more than" in done.stderr and "Traceback" not in done.stderr
    assert peak_mb(done.stderr) < 1024


def test_a_json_file_past_the_size_limit_is_not_parsed(tiny, tmp_path):
    from pipeline.storage.safe import MAX_FILE_BYTES, ReleaseError, read_json

    copy = copy_release(tiny, tmp_path / "copy")
    task = sorted((copy / "tasks").rglob("*.json"))[0]
    with open(task, "r+b") as handle:
        handle.truncate(MAX_FILE_BYTES + 10)  # a sparse file: no disk used
    with pytest.raises(ReleaseError, match="larger than"):
        read_json(copy, task.relative_to(copy).as_posix())


def _fake_sharded(root: Path, config: dict | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "shards" / "00000").mkdir(parents=True)
    (root / "shards" / "00000" / "shard.json").write_text("{}")
    manifest = {
        "format": "gridbench-shards/1",
        "name": "train",
        "version": "1.0.0",
        "config": config or {},
        "counts": {"tasks": 1},
        "shards": [{"shard": "00000", "tasks": 1, "sha256": "0" * 64}],
        "files": {"shards/00000/shard.json": "0" * 64},
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def _verify(release: Path, capsys) -> tuple[int, str]:
    from gridbench.commands.verify import verify

    cfg = compose_config([f"release={release}", "verify.workers=1"], "verify", "apps")
    with deadline(60):
        code = verify(cfg)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "link_to_a_manifest", "folder"])
@pytest.mark.parametrize("layout", ["flat", "sharded"])
def test_a_special_manifest_is_refused_before_any_read(kind, layout, tiny, tmp_path, capsys):
    release = copy_release(tiny, tmp_path / "copy") if layout == "flat" else _fake_sharded(tmp_path / "copy")
    manifest = release / "manifest.json"
    shutil.copy(manifest, tmp_path / "elsewhere.json")
    manifest.unlink()
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "dev_zero":
        manifest.symlink_to("/dev/zero")
    elif kind == "link_to_a_manifest":
        manifest.symlink_to(tmp_path / "elsewhere.json")
    else:
        manifest.mkdir()
    code, err = _verify(release, capsys)
    assert code == 1 and "manifest.json" in err and "Traceback" not in err
    assert "symlink" in err or "not a regular file" in err
    import gridbench

    with deadline(30), pytest.raises(UserError, match="manifest.json"):
        gridbench.load_release(release)


def test_a_fifo_inside_a_sharded_release_is_not_read(tmp_path, capsys):
    release = _fake_sharded(tmp_path / "copy")
    (release / "shards" / "00000" / "shard.json").unlink()
    os.mkfifo(release / "shards" / "00000" / "shard.json")
    code, err = _verify(release, capsys)
    assert code == 1 and "not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        ([0, 300_000_000], "more than 10000 values"),
        ([0, 10**30], "more than 10000 values"),
        (["0", "x"], "does not describe a build"),
    ],
)
def test_a_sharded_config_that_asks_for_absurd_sizes_is_refused_without_allocating(
    budgets, message, tmp_path, capsys
):
    import resource

    config = {
        "name": "train",
        "version": "1.0.0",
        "size": 10,
        "seed": 0,
        "shard_size": 10,
        "domains": ["toy"],
        "parts": [{"grid": "5x5", "hidden_slots": [1, 5], "decoy_budgets": budgets}],
        "candidates_per_slot": 25,
        "crosscheck": False,
        "output_root": str(tmp_path),
        "workers": 1,
    }
    release = _fake_sharded(tmp_path / "copy", config)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, err = _verify(release, capsys)
    assert code == 1 and message in err and "Traceback" not in err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: nothing made


def test_an_interpolation_in_a_recorded_config_is_never_resolved(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("H19_SECRET", "s3cr3t-value")
    release = _fake_sharded(tmp_path / "copy", {"name": "${oc.env:H19_SECRET}", "size": 1})
    code, err = _verify(release, capsys)
    assert code == 1 and "interpolation" in err and "s3cr3t-value" not in err


@pytest.mark.parametrize(
    "path",
    ["a" * 5000, "/" + "a/" * 2500, "x\0y", "/dev/null", "/proc/self/fd/0"],
    ids=["5000_characters", "deep", "nul", "dev_null", "fd"],
)
def test_a_path_that_is_no_release_is_one_line(path, capsys, monkeypatch):
    import gridbench
    from gridbench.commands.verify import main

    with pytest.raises(UserError) as refused:
        gridbench.load_release(path)
    assert "\n" not in str(refused.value) and "\0" not in str(refused.value) and len(str(refused.value)) < 400
    monkeypatch.setattr("sys.argv", ["verify", f"release={path}"])
    if "\0" in path:
        return  # a command line cannot hold a NUL
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_json_of_millions_of_empty_arrays_is_refused_before_parsing():
    from pipeline.storage.safe import ReleaseError, load_json

    with pytest.raises(ReleaseError, match="arrays and objects"):
        load_json(b"[" + b"[]," * 5_000_000 + b"[]]", "bomb.json")  # 15 MB: 5 million lists


def test_a_page_bomb_whose_footer_understates_it_is_refused_before_any_page_is_read(monkeypatch):
    """64 gzip pages of 4 MiB each (256 MiB, in 270 KB), under a footer that claims the column
    and its row group hold only what is on disk: the sizes come from the page headers, and no
    page is decompressed to find out."""
    import pyarrow.parquet as pq

    from pipeline.storage.parquet import read_arrow_table
    from pipeline.storage.safe import ReleaseError
    from tests.hostile import page_bomb

    data = page_bomb(64, 4 * 1024 * 1024)
    decompressed = []
    for name in ("read", "read_row_group", "read_row_groups", "iter_batches"):
        original = getattr(pq.ParquetFile, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):
            decompressed.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(pq.ParquetFile, name, spy)
    with pytest.raises(ReleaseError, match=r"bomb.parquet: declares 268435456 bytes uncompressed"):
        read_arrow_table(data, "bomb.parquet")
    assert decompressed == []
    small = page_bomb(4, 64 * 1024)  # the same construction, small: it is a real table
    assert read_arrow_table(small, "small.parquet").num_rows == 4


def test_legitimate_tables_written_in_one_row_row_groups_are_read(tiny, tmp_path):
    """Arrow keeps dictionaries of nested columns only within one row group: a table with
    several (one row each) was unreadable to the bounded reader, and verify refused it."""
    import pyarrow.parquet as pq

    from pipeline.storage.parquet import read_arrow_table
    from pipeline.storage.safe import read_bytes

    copy = copy_release(tiny, tmp_path / "copy")
    for relative in ("metadata.parquet", "timings.parquet", "data/answers.parquet", "data/tasks/toy.parquet"):
        table = pq.read_table(copy / relative)
        pq.write_table(table, copy / relative, row_group_size=1)
        assert pq.ParquetFile(copy / relative).metadata.num_row_groups == table.num_rows > 1
        assert read_arrow_table(read_bytes(copy, relative), relative).equals(table)


def test_reading_every_table_of_a_release_imports_no_pandas(tiny):
    """The bounds are counted in Arrow: an array's ``to_numpy`` (with nulls) imports pandas,
    about 0.7 s of every command that reads a release."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from pipeline.storage.parquet import read_arrow_table;"
        "from gridbench.release import load_release;"
        f"root = Path({str(tiny)!r}); tables = sorted(root.rglob('*.parquet'));"
        "[read_arrow_table(p.read_bytes(), str(p)) for p in tables]; load_release(root);"
        "print(len(tables), 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, imported = out.stdout.split()
    assert int(count) >= 3 and imported == "False"
