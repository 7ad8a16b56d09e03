"""The cell store's entries: a task is served only to the key it was made for, and an entry
is written whole or not at all."""

from __future__ import annotations

import json

import pytest

from pipeline.generation import GenerationSettings, TaskKey, generate_task
from pipeline.storage.cache import cached_path, load_cached, settings_fingerprint, store_cached


@pytest.fixture(scope="module")
def made():
    return generate_task(TaskKey("toy", 3, 3, 3, 2, 3, 0, 0), GenerationSettings())


def test_an_entry_is_served_to_its_own_key_only(tmp_path, made):
    fingerprint = settings_fingerprint(GenerationSettings())
    path = cached_path(tmp_path, made.key, fingerprint)
    store_cached(path, made)
    served = load_cached(path, made.key)
    assert served is not None and served.task.to_dict() == made.task.to_dict()
    assert served.answer.to_dict() == made.answer.to_dict()
    other = TaskKey("toy", 3, 3, 3, 2, 3, 0, 1)
    # copied to another key's place (a cache folder merged by hand): never served as that key
    other_path = cached_path(tmp_path, other, fingerprint)
    other_path.write_bytes(path.read_bytes())
    assert load_cached(other_path, other) is None


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(tmp_path, made, monkeypatch):
    path = cached_path(tmp_path, made.key, settings_fingerprint(GenerationSettings()))

    from pathlib import Path

    write_text = Path.write_text

    def full_disk(self, data, *args, **kwargs):  # half the entry lands, then the disk is full
        write_text(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError, match="No space"):
        store_cached(path, made)
    monkeypatch.undo()
    assert not path.exists() and list(path.parent.iterdir()) == []
    assert load_cached(path, made.key) is None
    store_cached(path, made)
    assert json.loads(path.read_text())["key"] == made.key.public()


def test_an_entry_of_an_older_format_is_made_again(tmp_path, made):
    """Planted bug q50 (round 7): an entry of ``gridbench-cache-1`` (the draw before release
    2.0.0) was served when the format check was dropped."""
    path = cached_path(tmp_path, made.key, settings_fingerprint(GenerationSettings()))
    store_cached(path, made)
    record = json.loads(path.read_text())
    assert record["format"] == "gridbench-cache-4"
    # 2: dfs_nodes to the first completion; 3: travel before its duration and crowd windows
    for older in ("gridbench-cache-1", "gridbench-cache-2", "gridbench-cache-3"):
        path.write_text(json.dumps({**record, "format": older}))
        assert load_cached(path, made.key) is None


@pytest.mark.parametrize("edit", ["rules_deleted", "instruction", "decoy_made_truth", "other_id", "sound"])
def test_a_cached_task_is_proven_again_before_it_is_reused(tmp_path, edit):
    """Hostile round 8: the grid-wide rules of a cached task deleted (its truth no longer the only
    completion), the release said "8 reused, 8 certified" and shipped it. A reused task is
    proven again; one that is not is made again, and the release ships what generation makes."""
    from pipeline.storage.cache import make_task

    settings = GenerationSettings()
    key = TaskKey("toy", 3, 3, 3, 2, 4, 0, 0)
    made = generate_task(key, settings)
    path = cached_path(tmp_path, key, settings_fingerprint(settings))
    store_cached(path, made)
    record = json.loads(path.read_text())
    if edit == "rules_deleted":
        record["task"]["global_constraints"] = []
    elif edit == "instruction":
        record["task"]["instruction"] += " The answer is in the first column."
    elif edit == "other_id":  # another task's entry copied here, its id and key renamed (round 9)
        record["task"]["task_id"] = record["answer"]["task_id"] = "toy-000000000000"
    elif edit == "decoy_made_truth":  # the answer's truth swapped for one of a cell's decoys
        role = next(r for r in record["answer"]["roles"] if r["decoys"])
        record["answer"]["truth"][role["row"]][role["col"]] = role["decoys"][0]
    path.write_text(json.dumps(record))
    served, reused = make_task(key, settings, tmp_path)
    assert reused == (edit == "sound")
    assert served.task.to_dict() == made.task.to_dict() and served.answer.to_dict() == made.answer.to_dict()


@pytest.mark.parametrize("workers", [1, 2])
def test_make_tasks_calls_meanwhile_once_while_the_workers_generate_and_gives_the_same_tasks(
    tmp_path, workers
):
    """The release prepares its writer while its workers generate: ``meanwhile`` runs once,
    after every key is handed out and before the tasks are collected, and changes nothing of
    them; an error in it stops the workers."""
    from pipeline.parallel import _Shared, shared_pool
    from pipeline.storage.cache import make_tasks

    keys = [TaskKey("toy", 3, 3, 3, 2, 3, 0, index) for index in range(4)]
    settings = GenerationSettings()
    calls = []
    with shared_pool(workers):
        made, reused = make_tasks(keys, settings, None, workers, "", lambda: calls.append(_Shared.pool))
    assert len(calls) == 1 and reused == 0
    assert (calls[0] is not None) == (workers > 1)  # the workers were started before it ran
    plain, _ = make_tasks(keys, settings, None, 1, "")
    assert [m.task.to_dict() for m in made] == [m.task.to_dict() for m in plain]
    assert [m.answer.to_dict() for m in made] == [m.answer.to_dict() for m in plain]

    def broken():
        raise OSError("disk gone")

    with shared_pool(workers):
        with pytest.raises(OSError, match="disk gone"):
            make_tasks(keys, settings, None, workers, "", broken)
        assert _Shared.pool is None or workers == 1


def test_a_domain_defined_otherwise_is_not_served_the_old_domain_s_tasks(tmp_path, monkeypatch):
    """Travel gained two grid windows (a461e92) and a release built over a cache of the code
    before shipped the old travel tasks, certified again, with the tell those windows removed:
    the same configuration gave other bytes depending on the cache. A domain's definition is
    part of its entries' path: a change of it (here one more grid rule of the toy domain) makes
    the task again, the same as without a cache; the domain as it was is served again."""
    import dataclasses

    from domains import GlobalRuleTemplate, registry
    from pipeline.storage.cache import domain_fingerprint, make_task

    settings = GenerationSettings()
    key = TaskKey("toy", 3, 3, 3, 2, 4, 0, 0)
    made, reused = make_task(key, settings, tmp_path)
    assert not reused and make_task(key, settings, tmp_path)[1]
    before = domain_fingerprint("toy")
    toy = registry._REGISTRY["toy"]
    extra = GlobalRuleTemplate("size_total_min", "sum_min", toy.attributes[0].name)
    changed = dataclasses.replace(toy, global_rules=(*toy.global_rules, extra))
    monkeypatch.setitem(registry._REGISTRY, "toy", changed)
    assert domain_fingerprint("toy") != before
    served, reused = make_task(key, settings, tmp_path)
    assert not reused
    assert served.task.to_dict() == generate_task(key, settings).task.to_dict()
    monkeypatch.undo()
    assert domain_fingerprint("toy") == before
    served, reused = make_task(key, settings, tmp_path)
    assert reused and served.task.to_dict() == made.task.to_dict()


@pytest.mark.parametrize("squatter", ["folder at the entry", "file at its folder"])
def test_a_cache_entry_that_cannot_be_written_names_the_cache_and_its_key(tmp_path, made, squatter):
    """A folder where a cache entry goes (or a file where its folder goes) is the cache's to
    fix: the one line names the entry and ``release.cache_root`` (an outside run: it named the
    output folder, which was fine), and no temporary file stays behind."""
    from gridbench_core.errors import UserError

    path = cached_path(tmp_path / "cells", made.key, settings_fingerprint(GenerationSettings()))
    if squatter == "folder at the entry":
        (path / "inside").mkdir(parents=True)
    else:
        path.parent.parent.mkdir(parents=True)
        path.parent.write_text("not a folder")
    with pytest.raises(UserError) as error:
        store_cached(path, made)
    line = str(error.value)
    assert str(path) in line and "release.cache_root" in line and "\n" not in line
    assert sorted(p.name for p in path.parent.parent.rglob("*")) == sorted(
        [path.parent.name, *(["inside", path.name] if squatter == "folder at the entry" else [])]
    )


def test_a_build_stopped_while_its_worker_writes_an_entry_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A signal sweep over `gridbench release`: Ctrl-C or SIGTERM while a worker was writing a
    cache entry left its temporary file in the cache (about one run in ten). The build now
    removes its own temporary files when it stops early; another build's (named after its
    own run, maybe on another machine sharing the cache) are left alone."""
    from pathlib import Path

    from pipeline.storage.cache import make_tasks

    keys = [TaskKey("toy", 3, 3, 3, 2, 3, 0, index) for index in range(3)]
    settings = GenerationSettings()
    root = tmp_path / "cells"
    other = cached_path(root, keys[2], settings_fingerprint(settings)).with_name(
        f"{keys[2].task_id}.tmp-other-1"
    )
    other.parent.mkdir(parents=True)
    other.write_text("{}")  # another build's, still writing
    replace = Path.replace
    written = []

    def stopped_halfway(self, target):  # the second entry's write is where Ctrl-C lands
        written.append(self)
        if len(written) == 2:
            raise KeyboardInterrupt
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", stopped_halfway)
    with pytest.raises(KeyboardInterrupt):
        make_tasks(keys, settings, root, 1, "")
    assert written[1].name.startswith(f"{keys[1].task_id}.tmp-") and not written[1].exists()
    left = sorted(p.name for p in root.rglob("*") if p.is_file())
    assert left == sorted([f"{keys[0].task_id}.json", other.name])
