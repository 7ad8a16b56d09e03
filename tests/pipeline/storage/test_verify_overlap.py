"""verify proves in its workers while this process checks the files, the tables and the card
(issue 30), and those checks parse each task and answer file once: the same report as
before, an error in the checks stops the workers, and a file that fails to parse fails each
reader with its own message."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import pipeline.storage.safe as safe
import pipeline.storage.verification as verification
from pipeline.parallel import _Shared, shared_pool
from pipeline.storage.safe import ReleaseError, parsed_once, read_json
from pipeline.storage.verification import VerifySettings, verify_release
from solvers.results import SolverSettings
from tests.helpers_release import copy_release, redigest


def _verify(release: Path, workers: int) -> tuple[dict, dict, list, list]:
    report = verify_release(release, VerifySettings(SolverSettings(), None, workers))
    return dict(report.tasks), dict(report.failures), report.file_failures, report.unverified


@pytest.fixture
def parses(monkeypatch) -> Counter:
    """How many times each file is parsed (by the name ``load_json`` is given) while the test runs."""
    counted: Counter = Counter()
    real = safe.load_json

    def counting(data, where, *args):
        counted[where] += 1
        return real(data, where, *args)

    monkeypatch.setattr(safe, "load_json", counting)
    return counted


def test_read_json_parses_a_file_once_inside_a_block_and_afresh_outside(tmp_path, parses):
    (tmp_path / "a.json").write_text('{"x": [1, 2]}')
    (tmp_path / "bad.json").write_text('{"x": ')
    with parsed_once():
        first = read_json(tmp_path, "a.json")
        with parsed_once():  # a block inside another shares its files
            assert read_json(tmp_path, "a.json") is first
        for _ in range(2):  # a file that does not parse fails every reader, with its message
            with pytest.raises(ReleaseError, match="bad.json: not valid JSON"):
                read_json(tmp_path, "bad.json")
    assert parses == {"a.json": 1, "bad.json": 2}
    (tmp_path / "a.json").write_text('{"x": 3}')  # outside a block every read is afresh
    assert read_json(tmp_path, "a.json") == {"x": 3}
    assert parses["a.json"] == 2


def test_past_its_limit_a_block_parses_each_read_again_and_keeps_nothing_more(tmp_path, parses):
    """A very large release costs parses, not memory: files are kept up to the block's limit
    (bytes of JSON), the others parsed at each read, every read the file's value."""
    for name, text in (("a.json", '{"a": 1}'), ("b.json", '{"b": [2, 3]}'), ("c.json", "[4]")):
        (tmp_path / name).write_text(text)
    with parsed_once(limit=len('{"a": 1}') + len("[4]")):
        for _ in range(3):
            values = [read_json(tmp_path, name) for name in ("a.json", "b.json", "c.json")]
            assert values == [{"a": 1}, {"b": [2, 3]}, [4]]
    assert parses == {"a.json": 1, "b.json": 3, "c.json": 1}


def test_verify_parses_each_task_and_answer_file_once_in_this_process(small_release, parses):
    tasks, failures, file_failures, _ = _verify(small_release, 1)  # the proofs in this process too
    assert len(tasks) == 8 and not failures and not file_failures
    pairs = [name for name in parses if name.startswith(("tasks/", "answers/"))]
    assert len(pairs) == 16
    # once for the checks (metadata, tables, card) and once for the task's proof
    assert all(parses[name] == 2 for name in pairs), parses


@pytest.mark.parametrize("workers", [1, 2])
def test_a_release_with_damaged_tables_and_a_failing_proof_reports_both(small_release, tmp_path, workers):
    """Both halves run at once; the report holds what each found, as when they ran in turn."""
    release = copy_release(small_release, tmp_path / "r")
    task_file = sorted((release / "tasks").glob("*/*.json"))[0]
    answer_file = release / "answers" / task_file.parent.name / task_file.name
    answer = json.loads(answer_file.read_text())
    role = next(r for r in answer["roles"] if r["decoys"])
    role["truth"], role["decoys"][0] = role["decoys"][0], role["truth"]  # a decoy named the truth
    answer_file.write_text(json.dumps(answer))
    redigest(release, tables=False)  # the data/ tables still hold the old answer
    tasks, failures, file_failures, _ = _verify(release, workers)
    assert len(tasks) == 8
    assert list(failures) == [task_file.stem], failures
    assert any("data/answers.parquet" in line and task_file.stem in line for line in file_failures)
    assert (tasks, failures, file_failures) == _verify(release, 3 - workers)[:3]


def test_an_error_in_the_checks_stops_the_workers_still_proving(small_release, monkeypatch):
    """The checks run while the workers prove: an error there (a disk gone, Ctrl-C) ends the
    run at once, its workers stopped, not left proving."""
    seen = []

    def broken(*args, **kwargs):
        pool = _Shared.pool
        assert pool is not None  # the proofs are in the workers now
        seen.extend((getattr(pool, "_processes", None) or {}).values())
        raise OSError("disk gone")

    monkeypatch.setattr(verification, "check_release", broken)
    with shared_pool(2):
        with pytest.raises(OSError, match="disk gone"):
            verify_release(small_release, VerifySettings(SolverSettings(), None, 2))
        assert _Shared.pool is None
    assert seen and all(not process.is_alive() for process in seen)


def test_a_read_inside_a_pinned_block_must_give_the_bytes_of_its_digest(tmp_path, parses):
    import hashlib

    from pipeline.storage.safe import pinned, read_bytes

    (tmp_path / "a.json").write_text('{"x": 1}')
    digests = {"a.json": hashlib.sha256(b'{"x": 1}').hexdigest()}
    with pinned(tmp_path, digests):
        assert read_bytes(tmp_path, "a.json") == b'{"x": 1}'
        (tmp_path / "a.json").write_text('{"x":  1}')  # the same value, other bytes
        with pytest.raises(ReleaseError, match="a.json: changed while verify read it"):
            read_json(tmp_path, "a.json")
        (tmp_path / "b.json").write_text("[]")  # a file the block does not pin reads as it is
        assert read_json(tmp_path, "b.json") == []
    assert read_json(tmp_path, "a.json") == {"x": 1}  # outside the block, what the file holds


@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_changed_after_its_digest_check_fails_verify(small_release, tmp_path, monkeypatch, workers):
    """The proofs (in the workers) and the checks (here) read each file after the digests are
    checked: a file rewritten in between, even to the same JSON value, fails the read that
    meets it; it never passes on bytes the manifest does not name (an outside audit passed a
    release whose answer was swapped while two workers proved it)."""
    release = copy_release(small_release, tmp_path / "r")
    answer = sorted((release / "answers").rglob("*.json"))[0]
    real = verification.check_files

    def then_rewritten(path, manifest, report):
        sound = real(path, manifest, report)
        answer.write_text(json.dumps(json.loads(answer.read_text()), indent=3))  # same value
        return sound

    monkeypatch.setattr(verification, "check_files", then_rewritten)
    tasks, failures, file_failures, _ = _verify(release, workers)
    reasons = [r for rs in failures.values() for r in rs] + file_failures
    changed = [r for r in reasons if "changed while verify read it" in r]
    assert changed and all(answer.name in r for r in changed), reasons
    assert any(answer.stem in task_id or answer.name in r for task_id, rs in failures.items() for r in rs)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_shard_table_changed_after_its_digest_check_fails_verify(
    sharded_release, tmp_path, monkeypatch, workers
):
    """The same for a sharded release: a shard's table rewritten after the digest check (the
    same rows, other bytes) fails the shard's read in its worker."""
    import pyarrow.parquet as pq

    release = copy_release(sharded_release, tmp_path / "r")
    table = sorted(release.glob("shards/*/answers.parquet"))[0]
    real = verification.check_files

    def then_rewritten(path, manifest, report):
        sound = real(path, manifest, report)
        pq.write_table(pq.read_table(table), table, compression="gzip")  # the same rows
        return sound

    monkeypatch.setattr(verification, "check_files", then_rewritten)
    report = verify_release(release, VerifySettings(SolverSettings(), None, workers))
    reasons = report.file_failures + [r for rs in report.failures.values() for r in rs]
    assert any("answers.parquet: changed while verify read it" in r for r in reasons), reasons


def test_a_changed_read_is_a_failure_even_where_a_check_skips_the_file(small_release, tmp_path, monkeypatch):
    """Found by a second outside audit: some checks skip a file they cannot read (the table's
    own check names why), so a change raced between two reads passed. The pinned block keeps
    every changed read, and verify reports each, whatever the reader did with the error."""
    import pyarrow.parquet as pq

    release = copy_release(small_release, tmp_path / "r")
    table = release / "data" / "answers.parquet"

    def skipping(path, manifest, report, sound, schema):
        pq.write_table(pq.read_table(table), table, compression="gzip")  # the same rows
        try:
            safe.read_bytes(path, "data/answers.parquet")
        except ReleaseError:
            pass  # a check that skips what it cannot read

    monkeypatch.setattr(verification, "check_release", skipping)
    _, failures, file_failures, _ = _verify(release, 1)
    assert not failures  # the proofs read no table
    assert any(
        line.startswith("data/answers.parquet: changed while verify read it") for line in file_failures
    )
