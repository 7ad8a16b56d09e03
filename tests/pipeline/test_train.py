"""Sharded training sets: byte-identical rebuilds, resuming from finished shards, verify
shard by shard (and failing on a tampered shard), Hugging Face datasets over the shards."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests.helpers_release import compose_config

PARTS = (
    "parts=[{grid: 4x4, hidden_slots: [1, 4], decoy_budgets: [0, 3]},"
    " {grid: 5x5, hidden_slots: [2, 6], decoy_budgets: [0, 4]}]"
)


def _build(root: Path, *extra: str) -> Path:
    from gridbench.commands.train import build

    cfg = compose_config(
        [
            "size=24",
            "shard_size=8",
            "domains=[course,toy]",
            "candidates_per_slot=6",
            PARTS,
            f"output_root={root}",
            *extra,
        ],
        "train",
        "apps",
    )
    assert build(cfg) == 0
    return root / "gridbench-train-v2.0.0"


def _verify(release: Path) -> int:
    from gridbench.commands.verify import verify

    return verify(compose_config([f"release={release}", "verify.workers=2"], "verify", "apps"))


def _digests(release: Path) -> dict[str, str]:
    return {
        str(p.relative_to(release)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(release.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("train"))


def test_a_sharded_build_verifies_and_rebuilds_byte_identical(built, tmp_path):
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["counts"]["tasks"] == 24 and manifest["counts"]["shards"] == 3
    assert manifest["counts"]["per_grid"] == {"4x4": 16, "5x5": 8}
    assert _verify(built) == 0
    again = _build(tmp_path, "workers=1")
    assert _digests(again) == _digests(built)


def _unfinished_copy(built: Path, tmp_path: Path) -> Path:
    """A copy of ``built`` in ``tmp_path`` as a build killed before its manifest leaves it."""
    copy = tmp_path / "gridbench-train-v2.0.0"
    shutil.copytree(built, copy)
    (copy / "manifest.json").unlink()
    return copy


def test_a_killed_build_resumes_from_its_finished_shards(built, tmp_path):
    copy = _unfinished_copy(built, tmp_path)
    shutil.rmtree(copy / "shards" / "00001")  # a shard never written
    (copy / "shards" / "00002" / "answers.parquet").write_bytes(b"half")  # a shard cut short
    (copy / "shards" / ".00001.partial-999").mkdir()  # a worker killed while writing
    kept = (copy / "shards" / "00000" / "shard.json").stat().st_mtime_ns
    assert _build(tmp_path) == copy
    assert (copy / "shards" / "00000" / "shard.json").stat().st_mtime_ns == kept  # reused, not redone
    assert _digests(copy) == _digests(built) and not list(copy.glob("shards/.*"))
    assert _verify(copy) == 0


def test_a_record_that_lists_fewer_files_than_its_counts_is_made_again(built, tmp_path):
    """A killed build's shard whose record lists no files (and whose tables are gone) is no
    finished shard: the resumed build makes it again, the same bytes."""
    copy = _unfinished_copy(built, tmp_path)
    shard = copy / "shards" / "00000"
    record = json.loads((shard / "shard.json").read_text())
    (shard / "shard.json").write_text(json.dumps({**record, "files": {}}))
    for table in shard.glob("*.parquet"):
        table.unlink()
    assert _build(tmp_path) == copy
    assert _digests(copy) == _digests(built) and _verify(copy) == 0


def test_a_second_build_of_a_folder_stops_while_the_first_runs(tmp_path):
    """The build lock of make release: a second build of the same folder while the first runs
    is one line (it would remove the first's shards in the making)."""
    import subprocess

    from pipeline.storage.safe import ReleaseError

    first = subprocess.Popen(["sleep", "30"])  # a live process holding the lock
    try:
        (tmp_path / ".gridbench-train-v2.0.0.lock").write_text(str(first.pid))
        with pytest.raises(
            ReleaseError, match=f"another build of gridbench-train-v2.0.0 is running \\(pid {first.pid}\\)"
        ):
            _build(tmp_path)
        assert not (tmp_path / "gridbench-train-v2.0.0").exists()
    finally:
        first.kill()
        first.wait()
    assert _build(tmp_path).is_dir()  # a lock whose process is gone is taken over
    assert not (tmp_path / ".gridbench-train-v2.0.0.lock").exists()


@pytest.mark.parametrize("made_by", ["generator", "domain", "none"])
def test_a_killed_build_is_not_resumed_by_other_code(built, tmp_path, made_by):
    """A finished shard records what drew it (the generator's format and each domain's
    definition); a build killed under other code (a release that changed travel's rules, say)
    and resumed now would mix two draws in one training set, so it stops with one line and
    writes nothing; a shard recorded before this record existed is refused too."""
    copy = _unfinished_copy(built, tmp_path)
    path = copy / "shards" / "00000" / "shard.json"
    record = json.loads(path.read_text())
    if made_by == "generator":
        record["made_by"]["generator"] = "gridbench-cache-3"
    elif made_by == "domain":
        record["made_by"]["domains"]["toy"] = "0" * 12
    else:
        del record["made_by"]
    path.write_text(json.dumps(record))
    shutil.rmtree(copy / "shards" / "00001")
    with pytest.raises(UserError, match="another version of the generator or of a domain"):
        _build(tmp_path)
    assert not (copy / "manifest.json").exists()


def _report(release: Path):
    from pipeline.storage.verification import VerifySettings, verify_release
    from solvers.results import SolverSettings

    return verify_release(release, VerifySettings(SolverSettings(), None, 2))


def test_one_verifier_gives_a_sharded_release_the_report_of_a_plain_one(built):
    """``verify_release`` tells a sharded release by its manifest and returns the same
    :class:`VerifyReport`: every task with its domain, the shards with their rows."""
    from pipeline.storage.verification import VerifyReport

    report = _report(built)
    manifest = json.loads((built / "manifest.json").read_text())
    assert isinstance(report, VerifyReport) and report.ok
    assert len(report.tasks) == report.proved == 24
    assert report.shards == {"00000": 8, "00001": 8, "00002": 8}
    per_domain: dict[str, int] = {}
    for domain in report.tasks.values():
        per_domain[domain] = per_domain.get(domain, 0) + 1
    assert per_domain == manifest["counts"]["per_domain"]


@pytest.mark.slow  # the same checks run in-process in tests/pipeline/storage/test_verify_sharded.py
def test_verify_fails_on_a_re_signed_shard_whose_answers_lie(built, tmp_path):
    import pyarrow.parquet as pq

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    shard = copy / "shards" / "00000"
    table = pq.read_table(shard / "answers.parquet")
    pq.write_table(table.slice(1), shard / "answers.parquet")
    record = json.loads((shard / "shard.json").read_text())
    record["files"]["answers.parquet"] = hashlib.sha256((shard / "answers.parquet").read_bytes()).hexdigest()
    (shard / "shard.json").write_text(json.dumps(record))
    manifest = json.loads((copy / "manifest.json").read_text())
    for relative in ("shards/00000/answers.parquet", "shards/00000/shard.json"):
        manifest["files"][relative] = hashlib.sha256((copy / relative).read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert _verify(copy) == 1
    report = _report(copy)  # the task left without its answer is named, as in a plain release
    missing = str(table.column("task_id")[0])
    assert not report.ok and report.proved == 23 and list(report.failures) == [missing]
    assert "repeats or has no answer" in report.failures[missing][0]


@pytest.mark.slow
def test_the_card_configs_load_with_datasets_offline(built, monkeypatch, tmp_path):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    manifest = json.loads((built / "manifest.json").read_text())
    for domain, count in manifest["counts"]["per_domain"].items():
        rows = datasets.load_dataset(str(built), domain, split="train")
        assert rows.num_rows == count
    assert datasets.load_dataset(str(built), "answers", split="train").num_rows == 24


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["parts=[{grid: 5x5, hidden_slots: [4, 2], decoy_budgets: [0, 3]}]"], "low <= high"),
        (["parts=[{grid: 5x5, hidden_slots: [2, 40], decoy_budgets: [0, 3]}]"], "hidden"),
        (["parts=[{grid: 5x5, hidden_slots: [2, 4, 6], decoy_budgets: [0, 3]}]"], "a \\[low, high\\] range"),
        (["size=0"], "size=0"),
        (["name=../escape"], "may not hold"),
        (["name=" + "n" * 65], "a name is 1 to 64 letters"),
        (
            ["parts=[" + ", ".join(["{grid: 4x4, hidden_slots: [1, 2], decoy_budgets: [0, 1]}"] * 33) + "]"],
            "1 to 32",
        ),
    ],
)
def test_bad_train_configs_stop_before_any_shard(extra, needle, tmp_path):
    with pytest.raises(UserError, match=needle):
        _build(tmp_path, *extra)
    assert not list(tmp_path.rglob("shard.json"))


def test_a_resumed_build_refuses_shards_of_another_configuration(built, tmp_path):
    _unfinished_copy(built, tmp_path)
    with pytest.raises(UserError, match="made by another configuration"):
        _build(tmp_path, "seed=7")


def _resign(copy: Path) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    for relative in list(manifest["files"]):
        if (copy / relative).is_file():
            manifest["files"][relative] = hashlib.sha256((copy / relative).read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))


def _manifest_edit(copy: Path, edit) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "edit, needle",
    [
        # the command's exit code and message; every claim is checked in-process in
        # tests/pipeline/storage/test_verify_sharded.py
        (lambda m: m["shards"].append(dict(m["shards"][0])), "listed twice"),
        pytest.param(
            lambda m: m["counts"].update(per_domain={"course": 1000}),
            "counts.per_domain",
            marks=pytest.mark.slow,
        ),
        pytest.param(lambda m: m["counts"].update(tasks=50), "counts.tasks", marks=pytest.mark.slow),
        pytest.param(
            lambda m: m["counts"].update(per_grid={"99x99": 5}), "counts.per_grid", marks=pytest.mark.slow
        ),
        pytest.param(
            lambda m: m["config"].update(seed=7), "not made by the manifest's config", marks=pytest.mark.slow
        ),
        pytest.param(
            lambda m: m.update(shards=[1, "x", None]), "a shard entry is not", marks=pytest.mark.slow
        ),
        pytest.param(lambda m: m.update(counts=[]), "counts.tasks", marks=pytest.mark.slow),
        pytest.param(
            lambda m: m["shards"][0].update(tasks="ten"), "its entry of shard 00000", marks=pytest.mark.slow
        ),
    ],
)
def test_verify_checks_what_the_manifest_claims_and_never_crashes(built, tmp_path, capsys, edit, needle):
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    _manifest_edit(copy, edit)
    assert _verify(copy) == 1
    assert needle in capsys.readouterr().err


@pytest.mark.slow  # the same checks run in-process in tests/pipeline/storage/test_verify_sharded.py
def test_verify_names_a_malformed_row_and_goes_on(built, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    shard = copy / "shards" / "00000"
    table_path = sorted(shard.glob("tasks-*.parquet"))[0]
    table = pq.read_table(table_path)
    rows = table.to_pylist()
    rows[0]["grid"] = []
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), table_path)
    record = json.loads((shard / "shard.json").read_text())
    record["files"][table_path.name] = hashlib.sha256(table_path.read_bytes()).hexdigest()
    (shard / "shard.json").write_text(json.dumps(record, indent=1, sort_keys=True))
    _resign(copy)
    assert _verify(copy) == 1
    err = capsys.readouterr().err
    assert f"{table_path.name}: row 0 malformed" in err and "Traceback" not in err


def test_a_build_refuses_shard_folders_it_would_not_make(built, tmp_path):
    _unfinished_copy(built, tmp_path)
    with pytest.raises(UserError, match="is not a shard of this build"):
        _build(tmp_path, "size=8")
    with pytest.raises(UserError, match="at most"):
        _build(tmp_path / "other", "size=1000000000000", "shard_size=1")


def test_a_shard_converted_in_batches_is_the_shard_converted_at_once(tmp_path, monkeypatch):
    """The worker turns its rows into Arrow tables a few tasks at a time (and drops the dicts):
    whatever the batch, every file of the shard is the file of all its rows written at once,
    and the collector is back to normal after the shard."""
    import gc

    from pipeline.storage import shards

    job = shards.ShardJob(str(tmp_path), 0, 7, 5, ("course", "toy"), "4x4", (1, 4), (0, 3), 6, False)
    records = {}
    for batch in (10**6, 1, 3):
        monkeypatch.setattr(shards, "TABLE_BATCH", batch)
        shutil.rmtree(tmp_path / "shards", ignore_errors=True)
        records[batch] = shards.make_shard(job)
        assert gc.get_freeze_count() == 0
    assert len(records[1]["per_domain"]) == 2  # both domains' tables, each in several batches
    assert records[1] == records[3] == records[10**6]


def test_shards_are_handed_out_longest_first_and_listed_in_shard_order(built, tmp_path, monkeypatch):
    """The shards with the most cells to fill go to the workers first (the last one left
    running alone is then among the shortest); the manifest still lists them in shard order,
    and each shard is what its index makes it (the module build's digests)."""
    import gridbench.commands.train as train

    handed: list[tuple[str, str]] = []
    make_shard = train.make_shard

    def recorded(job):  # type: ignore[no-untyped-def]
        handed.append((job.name, job.grid))
        return make_shard(job)

    monkeypatch.setattr(train, "make_shard", recorded)
    release = _build(tmp_path, "workers=1")
    assert handed == [("00001", "5x5"), ("00000", "4x4"), ("00002", "4x4")]
    manifest = json.loads((release / "manifest.json").read_text())
    assert [entry["shard"] for entry in manifest["shards"]] == ["00000", "00001", "00002"]
    assert manifest["shards"] == json.loads((built / "manifest.json").read_text())["shards"]
    assert _digests(release) == _digests(built)


def test_a_shard_with_re_drawn_items_verifies_and_counts_them(tmp_path, monkeypatch):
    """An item whose first (domain, H, B) cannot be certified is re-drawn; verify finds each
    task among its item's re-draws and the record's count of them is the one it holds."""
    import pipeline.generation.build as build_module
    from pipeline.generation.keys import GenerationError

    generate = build_module.generate_task
    refused: list[str] = []

    def first_draw_of_item_one_fails(key, settings=None):  # type: ignore[no-untyped-def]
        if key.index == 1 and not refused:
            refused.append(key.task_id)
            raise GenerationError("refused for the test")
        return generate(key, settings)

    monkeypatch.setattr(build_module, "generate_task", first_draw_of_item_one_fails)
    release = _build(tmp_path, "workers=1", "size=8")
    records = [json.loads(p.read_text()) for p in sorted(release.glob("shards/*/shard.json"))]
    assert refused and records[0]["redraws"] == 1 and sum(r["redraws"] for r in records) == 1
    report = _report(release)
    assert report.ok and report.proved == 8, (report.file_failures, dict(report.failures))


def test_longest_first_weighs_a_shard_by_its_mean_cells_to_fill_and_its_count():
    """A shard's work is its count times the middle of its H range (low + high): 8 tasks of
    H 1..9 (weight 80) before 8 of H 4..4 (64) before 4 of H 5..9 (56), whatever the lower
    ends say; equal weights stay in shard order."""
    from pipeline.storage.shards import ShardJob, longest_first

    def job(index: int, count: int, hidden: tuple[int, int]) -> ShardJob:
        return ShardJob("root", index, count, index, ("toy",), "5x5", hidden, (0, 3), 6, False)

    jobs = [job(0, 8, (4, 4)), job(1, 4, (5, 9)), job(2, 8, (1, 9)), job(3, 8, (3, 5))]
    assert [j.index for j in longest_first(jobs)] == [2, 0, 3, 1]


def test_a_shard_s_dataset_is_create_dataset_s_for_its_recipe():
    """The dataset a shard is made from and verify reads its keys from draws what
    ``create_dataset`` with the recipe's arguments draws (the same key for every item and
    re-draw)."""
    from pipeline.generation.dataset import create_dataset
    from pipeline.storage.shards import ShardJob, shard_dataset

    job = ShardJob("/nowhere", 3, 40, 12345, ("course", "toy"), "5x7", (2, 9), (0, 12), 10, True)
    ours = shard_dataset(job)
    theirs = create_dataset(
        domains=["course", "toy"],
        size=40,
        seed=12345,
        grid="5x7",
        hidden_slots=range(2, 10),
        decoy_budgets=range(0, 13),
        candidates_per_slot=10,
    )
    assert [ours.key(i, r) for i in range(40) for r in range(3)] == [
        theirs.key(i, r) for i in range(40) for r in range(3)
    ]
    assert ours.settings.crosscheck and len(ours) == 40


@pytest.mark.parametrize("where", ["build folder", "shards", "a shard"])
def test_a_symlink_in_the_build_folder_is_refused_by_name(tmp_path, where):
    """A shard is replaced where it stands (a killed build's damaged one too), never through a
    link: a linked build folder, shards/ or shard folder stops the build with one line naming it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "out" / "gridbench-train-v2.0.0"
    linked = {"build folder": root, "shards": root / "shards", "a shard": root / "shards" / "00001"}[where]
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match=f"^{linked}: a symlink in the build folder"):
        _build(tmp_path / "out")
    assert not list(elsewhere.iterdir())


def test_a_build_folder_with_a_line_break_is_shown_escaped(tmp_path, capsys):
    from gridbench.commands.train import build

    cfg = compose_config(
        ["size=8", "shard_size=8", "domains=[toy]", "candidates_per_slot=6", PARTS], "train", "apps"
    )
    cfg.output_root = str(tmp_path / "a\nb")  # one a command line cannot give Hydra unquoted
    assert build(cfg) == 0
    out = capsys.readouterr().out
    assert "a\\nb" in out and "a\nb" not in out
