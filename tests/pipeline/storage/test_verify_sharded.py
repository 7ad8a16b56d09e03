"""Verify on a sharded release (``make train``), check by check, on copies of the shared
two-shard release of ``tests/conftest.py``: the manifest's shard list and counts against what
the shards hold, each shard record against its files and the config's recipe, each shard's
rows (unreadable tables, repeated or answerless rows, edited prompts, malformed rows, answers
of no task, wrong answers), and the name, card and licence claims. Each damage is named by
its exact line and costs nothing else; the proofs run without the MILP (CP-SAT alone) except
where the cross-check path is the point."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.storage.verification import (
    VerifySettings,
    _sharded_claims,
    verify_release,
    verify_shard,
)
from solvers.results import SolverSettings

SOLVER = SolverSettings(time_limit_s=30.0)
PLAIN = VerifySettings(SOLVER, None, 1)
CARD = "README.md: not the card this release's manifest gives (edited?)"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def copy(sharded_release, tmp_path) -> Path:
    target = tmp_path / sharded_release.name
    shutil.copytree(sharded_release, target)
    return target


def _manifest(release: Path) -> dict:
    return json.loads((release / "manifest.json").read_text())


def _write_manifest(release: Path, manifest: dict) -> None:
    (release / "manifest.json").write_text(json.dumps(manifest))


def _resign(release: Path, shard: str | None = None) -> None:
    """Digests written again after an edit: a shard's record (its files) and the manifest
    (every file, and each shard entry's digest of its record), as a forger would."""
    if shard is not None:
        record_path = release / "shards" / shard / "shard.json"
        record = json.loads(record_path.read_text())
        if isinstance(record, dict) and isinstance(record.get("files"), dict):
            for name in record["files"]:
                if (release / "shards" / shard / name).is_file():
                    record["files"][name] = _sha(release / "shards" / shard / name)
            record_path.write_text(json.dumps(record, indent=1, sort_keys=True))
    manifest = _manifest(release)
    for relative in manifest["files"]:
        if (release / relative).is_file():
            manifest["files"][relative] = _sha(release / relative)
    for entry in manifest["shards"]:
        entry["sha256"] = _sha(release / "shards" / entry["shard"] / "shard.json")
    _write_manifest(release, manifest)


def _verify(release: Path, settings: VerifySettings = PLAIN):
    return verify_release(release, settings)


def _rows(path: Path) -> tuple[list[dict], pa.Schema]:
    table = pq.read_table(path)
    return table.to_pylist(), table.schema


def _write_rows(path: Path, rows: list[dict], schema: pa.Schema) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def test_a_sound_sharded_release_verifies_every_row_of_every_shard(sharded_release):
    report = _verify(sharded_release)
    assert report.ok and report.file_failures == [] and not report.failures
    assert report.shards == {"00000": 4, "00001": 4}
    assert len(report.tasks) == report.proved == 8
    per_domain: dict[str, int] = {}
    for task_id, domain in report.tasks.items():
        assert task_id.startswith(domain + "-")
        per_domain[domain] = per_domain.get(domain, 0) + 1
    assert per_domain == _manifest(sharded_release)["counts"]["per_domain"]


def _counts_lines(**held) -> set[str]:
    return {
        f"manifest.json: counts.{key} is {claimed}, the shards hold {value}"
        for key, (claimed, value) in held.items()
    }


@pytest.mark.parametrize(
    "case",
    [
        "interpolation",
        "config not a mapping",
        "config without parts",
        "entry not a mapping",
        "entry of four digits",
        "entry listed twice",
        "entry dropped",
        "entry tasks",
        "entry digest",
        "counts",
        "counts not a mapping",
        "name",
        "version",
    ],
)
def test_each_manifest_claim_is_checked_by_its_own_line(copy, case):
    manifest = _manifest(copy)
    counts = dict(manifest["counts"])
    expected: set[str]
    proved = 8
    bad_config = "manifest.json: its config does not describe a build ("
    if case == "interpolation":
        manifest["config"]["name"] = "${oc.env:HOME}"
        expected = {bad_config + "an interpolation (${...}) in a recorded config is never resolved)"}
    elif case == "config not a mapping":
        manifest["config"] = ["a", "list"]
        expected = {bad_config + "the configuration is not a mapping)"}
    elif case == "config without parts":
        del manifest["config"]["parts"]
        expected = None  # type: ignore[assignment]
    elif case == "entry not a mapping":
        manifest["shards"].append(7)
        expected = {"manifest.json: a shard entry is not {shard: NNNNN, ...}: 7"}
    elif case == "entry of four digits":
        manifest["shards"].append({"shard": "0001", "tasks": 4})
        expected = {"manifest.json: a shard entry is not {shard: NNNNN, ...}: {'shard': '0001', 'tasks': 4}"}
    elif case == "entry listed twice":
        manifest["shards"].append(dict(manifest["shards"][1]))
        expected = {"manifest.json: a shard is listed twice"}
    elif case == "entry dropped":
        manifest["shards"] = manifest["shards"][:1]
        expected = {"manifest.json: lists 1 shards; its config makes 2"} | _counts_lines(
            tasks=(8, 4),
            shards=(2, 1),
            per_domain=(counts["per_domain"], _shard_domains(copy, "00000")),
            per_grid=({"4x4": 4, "5x5": 4}, {"4x4": 4}),
        )
        proved = 4
    elif case == "entry tasks":
        manifest["shards"][1]["tasks"] = 5
        expected = {"manifest.json: its entry of shard 00001 is not the shard's record"}
    elif case == "entry digest":
        manifest["shards"][0]["sha256"] = "0" * 64
        expected = {"manifest.json: its entry of shard 00000 is not the shard's record"}
    elif case == "counts":
        manifest["counts"].update(tasks=9, shards=3, per_domain={"toy": 8}, per_grid={"4x4": 8})
        expected = _counts_lines(
            tasks=(9, 8),
            shards=(3, 2),
            per_domain=({"toy": 8}, counts["per_domain"]),
            per_grid=({"4x4": 8}, counts["per_grid"]),
        ) | {CARD}  # the card is written again from the counts the manifest claims
    elif case == "counts not a mapping":
        manifest["counts"] = [8]
        expected = _counts_lines(
            tasks=(None, 8),
            shards=(None, 2),
            per_domain=(None, counts["per_domain"]),
            per_grid=(None, counts["per_grid"]),
            redraws=(None, 0),
        )
    else:  # the name or the version differs from its config's
        manifest[case] = "other"
        expected = {f"manifest.json: {case} 'other' is not its config's"}
    _write_manifest(copy, manifest)
    report = _verify(copy)
    if case == "config without parts":  # the type of what went wrong, never a traceback
        assert len(report.file_failures) == 1 and report.file_failures[0].startswith(bad_config)
    else:
        assert set(report.file_failures) == expected and len(report.file_failures) == len(expected)
    assert report.proved == proved and not report.failures


def _recipe_seed(release: Path, shard: str) -> int:
    return int(json.loads((release / "shards" / shard / "shard.json").read_text())["recipe"]["seed"])


def _shard_domains(release: Path, shard: str) -> dict[str, int]:
    return json.loads((release / "shards" / shard / "shard.json").read_text())["per_domain"]


@pytest.mark.parametrize(
    "case, line",
    [
        ("not a mapping", "shards/00000/shard.json: not a shard record"),
        ("files not a mapping", "shards/00000/shard.json: not a shard record"),
        ("tasks not a number", "shards/00000/shard.json: not a shard record"),
        ("another recipe", "shards/00000/shard.json: the shard was not made by the manifest's config"),
        (
            "a file it does not have",
            "shards/00000/tasks-extra.parquet: a file of shard 00000 is missing, unlisted or changed",
        ),
    ],
)
def test_a_shard_record_is_checked_against_its_files_and_the_config_s_recipe(copy, case, line):
    record_path = copy / "shards" / "00000" / "shard.json"
    record = json.loads(record_path.read_text())
    if case == "not a mapping":
        record = [record]
    elif case == "files not a mapping":
        record["files"] = list(record["files"])
    elif case == "tasks not a number":
        record["tasks"] = "4"
    elif case == "another recipe":
        record["recipe"]["seed"] += 1
    else:
        record["files"]["tasks-extra.parquet"] = "0" * 64
    record_path.write_text(json.dumps(record))
    _resign(copy)
    report = _verify(copy)
    assert line in report.file_failures
    if case == "another recipe":  # its rows are still proved: the recipe is a claim of its own
        assert report.file_failures == [line] and report.shards == {"00000": 4, "00001": 4}
    else:  # a shard whose record cannot be trusted is not read at all, so the counts fail too
        assert "00000" not in report.shards and report.shards == {"00001": 4}
        assert "manifest.json: counts.tasks is 8, the shards hold 4" in report.file_failures
    assert not report.failures


def test_a_changed_record_is_neither_trusted_nor_read(copy):
    record_path = copy / "shards" / "00000" / "shard.json"
    record_path.write_text(record_path.read_text().replace('"tasks": 4', '"tasks": 4 '))
    report = _verify(copy)
    assert "shards/00000/shard.json: digest mismatch (file changed)" in report.file_failures
    assert "shards/00000/shard.json: missing, unlisted or changed" in report.file_failures
    assert report.shards == {"00001": 4} and report.proved == 4


def test_a_record_s_grid_is_its_recipe_s_and_the_per_grid_count_the_recipes(copy):
    """A record that claims another grid than its recipe's is named; the manifest's (and the
    card's) count per grid is checked against the recipes, never against such a claim."""
    record_path = copy / "shards" / "00001" / "shard.json"
    record = json.loads(record_path.read_text())
    record["grid"] = "4x4"
    record_path.write_text(json.dumps(record))
    _resign(copy)
    report = _verify(copy)
    assert report.file_failures == ["shards/00001/shard.json: grid is 4x4, its recipe's is 5x5"]


def test_one_task_in_two_shards_is_named(copy):
    """The same row in both shards (each shard's own tables and answers re-signed): each shard
    alone is sound, the release is not."""
    tasks0, _ = _rows(copy / "shards" / "00000" / "tasks-course.parquet")
    first_course = tasks0[0]["task_id"]
    for name in ("tasks-course.parquet", "answers.parquet"):
        rows0, schema = _rows(copy / "shards" / "00000" / name)
        rows1, _ = _rows(copy / "shards" / "00001" / name)
        twin = next(r for r in rows0 if r["task_id"] == first_course)
        _write_rows(copy / "shards" / "00001" / name, [*rows1, twin], schema)
    record_path = copy / "shards" / "00001" / "shard.json"
    record = json.loads(record_path.read_text())
    record["tasks"] += 1
    record["per_domain"]["course"] += 1
    record_path.write_text(json.dumps(record))
    manifest = _manifest(copy)
    manifest["shards"][1]["tasks"] += 1
    manifest["counts"]["tasks"] += 1
    manifest["counts"]["per_domain"]["course"] += 1
    manifest["counts"]["per_grid"]["5x5"] += 1
    _write_manifest(copy, manifest)
    _resign(copy, "00001")
    report = _verify(copy)
    assert report.file_failures == [
        CARD,
        "shards/00001/shard.json: tasks is 5, its recipe's is 4",
        f"1 task ids appear in more than one row ({first_course}, ...)",
    ]
    assert report.shards == {"00000": 4, "00001": 5} and len(report.tasks) == 8
    # shard 00001's copy is no item of its recipe (its certificate names shard 00000's seed)
    assert report.failures[first_course] == [
        "shards/00001/answers.parquet: its certificate's seed and index name no item of the shard "
        f"(seed {_recipe_seed(copy, '00001')}, items 0..3)"
    ]


def _shard_args(release: Path, shard: str = "00000", milp: str | None = None):
    record = json.loads((release / "shards" / shard / "shard.json").read_text())
    return (str(release), shard, record["files"], SOLVER, milp)


@pytest.mark.parametrize("milp", [None, "highs"])
def test_verify_shard_proves_each_row_and_counts_it(sharded_release, milp):
    out = verify_shard(_shard_args(sharded_release, milp=milp))
    answers, _ = _rows(sharded_release / "shards" / "00000" / "answers.parquet")
    assert out["shard"] == "00000" and out["failures"] == [] and out["task_failures"] == []
    assert out["per_domain"] == {"course": 2, "toy": 2} and out["proved"] == 4
    assert sorted(out["tasks"]) == sorted([r["task_id"], r["task_id"].split("-")[0]] for r in answers)


def test_unreadable_answers_stop_the_shard_and_an_unreadable_table_only_its_domain(copy):
    shard = copy / "shards" / "00000"
    original = (shard / "answers.parquet").read_bytes()
    (shard / "answers.parquet").write_bytes(b"PAR1 not a table PAR1")
    out = verify_shard(_shard_args(copy))
    assert out["failures"] == [
        "shards/00000/answers.parquet: shards/00000/answers.parquet: unreadable Parquet (ArrowInvalid)"
    ]
    assert out["tasks"] == [] and out["per_domain"] == {} and out["proved"] == 0
    (shard / "answers.parquet").write_bytes(original)
    (shard / "tasks-course.parquet").write_bytes(b"PAR1 not a table PAR1")  # read first of two
    out = verify_shard(_shard_args(copy))
    course = [r["task_id"] for r in _rows(shard / "answers.parquet")[0] if r["task_id"].startswith("course-")]
    assert out["failures"][0] == "shards/00000/tasks-course.parquet: unreadable Parquet (ArrowInvalid)"
    assert out["failures"][1] == (
        f"shards/00000/answers.parquet: 2 answers of no task ({sorted(course)[0]}, ...)"
    )
    assert len(out["failures"]) == 2 and out["per_domain"] == {"toy": 2} and out["proved"] == 2


def test_only_the_record_s_task_tables_are_read(sharded_release):
    root, name, files, solver, milp = _shard_args(sharded_release)
    files = {k: v for k, v in files.items() if k != "tasks-toy.parquet"}
    files["tasks-toy.json"] = files["notes-tasks-course.parquet"] = "0" * 64
    out = verify_shard((root, name, files, solver, milp))
    assert out["per_domain"] == {"course": 2} and out["proved"] == 2
    assert len(out["failures"]) == 1 and "2 answers of no task" in out["failures"][0]


def test_rows_that_repeat_lack_an_answer_or_carry_another_prompt_are_named(copy):
    path = copy / "shards" / "00000" / "tasks-course.parquet"
    rows, schema = _rows(path)
    first = rows[0]["task_id"]
    prompt = [dict(message) for message in rows[1]["prompt"]]
    prompt[-1]["content"] += " (edited)"
    edited = {**rows[1], "prompt": prompt}
    orphan = {**rows[0], "task_id": "course-000000000000"}
    _write_rows(path, [rows[0], edited, dict(rows[0]), orphan], schema)
    out = verify_shard(_shard_args(copy))
    rel = "shards/00000/tasks-course.parquet"
    assert out["task_failures"] == [
        [rows[1]["task_id"], f"{rel}: row 1: its prompt is not the one its task renders"],
        [first, f"{rel}: row 2 repeats or has no answer"],
        ["course-000000000000", f"{rel}: row 3 repeats or has no answer"],
    ]
    assert out["failures"] == [] and out["per_domain"] == {"course": 4, "toy": 2}
    assert len(out["tasks"]) == 6 and out["proved"] == 4
    report = _verify_resigned(copy)
    assert dict(report.failures) == {task_id: [reason] for task_id, reason in out["task_failures"]}


def _verify_resigned(copy: Path):
    _resign(copy, "00000")
    return _verify(copy)


def test_a_malformed_row_is_named_and_the_shard_goes_on(copy):
    path = copy / "shards" / "00000" / "tasks-course.parquet"
    rows, schema = _rows(path)
    rows[0]["grid"] = []
    _write_rows(path, rows, schema)
    out = verify_shard(_shard_args(copy))
    rel = "shards/00000/tasks-course.parquet"
    assert len(out["failures"]) == 1 and out["failures"][0].startswith(f"{rel}: row 0 malformed: ")
    assert out["proved"] == 3 and out["per_domain"] == {"course": 2, "toy": 2}


def test_a_wrong_answer_is_named_with_its_table(copy):
    """The answer of one task given to another (its truth changes visible cells): the row's
    task is named with the reasons prove_data gives, prefixed by its table."""
    path = copy / "shards" / "00000" / "answers.parquet"
    answers, schema = _rows(path)
    course = [i for i, r in enumerate(answers) if r["task_id"].startswith("course-")]
    victim = answers[course[0]]["task_id"]
    answers[course[0]] = {**answers[course[1]], "task_id": victim}
    _write_rows(path, answers, schema)
    out = verify_shard(_shard_args(copy))
    reasons = [reason for task_id, reason in out["task_failures"] if task_id == victim]
    assert reasons and all(r.startswith("shards/00000/tasks-course.parquet: ") for r in reasons)
    assert {task_id for task_id, _ in out["task_failures"]} == {victim}
    assert out["proved"] == 3 and out["failures"] == []


def _plan(**changes):
    return SimpleNamespace(**{"name": "sharded", "version": "2.0.0", **changes})


def test_the_name_card_and_licence_claims(copy):
    manifest = _manifest(copy)
    sound = set(manifest["files"])
    assert _sharded_claims(copy, manifest, _plan(), sound) == []
    assert _sharded_claims(copy, manifest, _plan(name="other", version="3.0.0"), sound) == [
        "manifest.json: name 'sharded' is not its config's",
        "manifest.json: version '2.0.0' is not its config's",
        CARD,  # the card is written from the config's name and version
    ]
    shown = "bad\x1b[31m"
    unsafe = {**manifest, "name": shown}
    assert _sharded_claims(copy, unsafe, _plan(name=shown), sound) == [
        f"manifest.json: name {shown[:40]!r} is not its config's",
        CARD,
    ]
    (copy / "LICENSE").write_text("All rights reserved.\n")
    (copy / "README.md").write_text((copy / "README.md").read_text() + "\nedited\n")
    assert _sharded_claims(copy, manifest, _plan(), sound) == [
        "LICENSE: not the licence a build writes (CC BY 4.0); the text was changed",
        "README.md: not the card this release's manifest gives (edited?)",
    ]
    # files whose digest failed are told by check_files, not read again here
    assert _sharded_claims(copy, manifest, _plan(), sound - {"LICENSE", "README.md"}) == []
    # a card is only written again from counts that can say it
    odd = {**manifest, "counts": {**manifest["counts"], "per_grid": [4, 4]}}
    assert _sharded_claims(copy, odd, _plan(), sound - {"LICENSE"}) == []
    unlisted = {**manifest, "files": {}}
    assert _sharded_claims(copy, unlisted, _plan(), set()) == [
        "manifest.json: README.md is not listed",
        "manifest.json: LICENSE is not listed",
    ]


def test_the_card_is_written_again_from_the_manifest_s_counts(copy):
    """A card that matches other counts is named: the counts it is written from are the
    manifest's own (edited here, the card left as it was)."""
    manifest = _manifest(copy)
    sound = set(manifest["files"])
    for counts in (
        {**manifest["counts"], "tasks": 9},
        {**manifest["counts"], "per_domain": {"course": 8}},
        {**manifest["counts"], "per_grid": {"4x4": 8}},
    ):
        claims = _sharded_claims(copy, {**manifest, "counts": counts}, _plan(), sound)
        assert claims == ["README.md: not the card this release's manifest gives (edited?)"]
    named = _sharded_claims(copy, manifest, _plan(name="renamed"), sound)
    assert "README.md: not the card this release's manifest gives (edited?)" in named


def test_progress_names_the_release_and_counts_shards(sharded_release, capsys):
    assert _verify(sharded_release).ok
    assert f"verify {sharded_release.name}: 2/2 shards" in capsys.readouterr().out


def test_a_bad_entry_first_does_not_stop_the_others_being_read(copy):
    manifest = _manifest(copy)
    manifest["shards"].insert(0, "00000")
    _write_manifest(copy, manifest)
    report = _verify(copy)
    assert report.file_failures == ["manifest.json: a shard entry is not {shard: NNNNN, ...}: 00000"]
    assert report.shards == {"00000": 4, "00001": 4} and report.proved == 8


def test_long_values_are_cut_to_their_limits_in_messages(copy):
    manifest = _manifest(copy)
    long_entry = {"shard": "x" * 200}
    manifest["shards"].append(long_entry)
    manifest["counts"]["per_domain"] = {"d" * 50: 1, "e" * 50: 2}
    _write_manifest(copy, manifest)
    report = _verify(copy)
    assert (
        f"manifest.json: a shard entry is not {{shard: NNNNN, ...}}: {str(long_entry)[:80]}"
        in report.file_failures
    )
    shown = str(manifest["counts"]["per_domain"])[:80]
    assert any(
        line.startswith(f"manifest.json: counts.per_domain is {shown}, the shards")
        for line in report.file_failures
    )
    broken = _manifest(copy)
    broken["config"]["domains"] = ["q" * 400]  # what is wrong is quoted to 200 characters
    _write_manifest(copy, broken)
    line = next(f for f in _verify(copy).file_failures if "does not describe" in f)
    detail = line[len("manifest.json: its config does not describe a build (") : -1]
    assert len(detail) == 200 and line.endswith(")")


def test_a_card_that_cannot_be_written_from_the_counts_is_one_line_never_a_crash(copy):
    manifest = _manifest(copy)
    manifest["counts"]["tasks"] = "many"
    _write_manifest(copy, manifest)
    report = _verify(copy)
    assert "manifest.json: its config does not describe a build (TypeError)" in report.file_failures
    assert report.proved == 8


def test_a_card_without_a_task_count_is_written_for_zero_tasks(copy):
    from pipeline.storage.shards import card

    manifest = _manifest(copy)
    counts = {k: v for k, v in manifest["counts"].items() if k != "tasks"}
    text = card("sharded", "2.0.0", sorted(counts["per_domain"]), 0, counts["per_grid"])
    (copy / "README.md").write_text(text)
    assert _sharded_claims(copy, {**manifest, "counts": counts}, _plan(), set(manifest["files"])) == []


def test_answers_that_are_not_an_answers_table_are_named_by_the_schema_check(copy):
    """Another table in the place of the answers (a task table, which Parquet reads fine):
    refused by the declared schema, its message cut to 300 characters."""
    shard = copy / "shards" / "00000"
    shutil.copy(shard / "tasks-course.parquet", shard / "answers.parquet")
    out = verify_shard(_shard_args(copy))
    (line,) = out["failures"]
    prefix = (
        "shards/00000/answers.parquet: shards/00000/answers.parquet: its columns are not the declared ones"
    )
    assert line.startswith(prefix) and len(line) == len("shards/00000/answers.parquet: ") + 300
    assert out["tasks"] == [] and out["proved"] == 0


def test_a_task_table_of_another_domain_is_refused_and_the_next_table_still_read(copy):
    shard = copy / "shards" / "00000"
    shutil.copy(shard / "tasks-toy.parquet", shard / "tasks-course.parquet")  # toy rows under course
    out = verify_shard(_shard_args(copy))
    assert out["failures"][0].startswith("shards/00000/tasks-course.parquet: ")
    assert len(out["failures"][0]) <= 300
    assert out["per_domain"] == {"toy": 2} and out["proved"] == 2
    assert out["failures"][1].startswith("shards/00000/answers.parquet: 2 answers of no task (course-")


def test_an_answer_of_no_task_is_named_by_forty_characters_of_its_id(copy):
    path = copy / "shards" / "00000" / "answers.parquet"
    answers, schema = _rows(path)
    long_id = "toy-" + "f" * 60
    _write_rows(path, [*answers, {**answers[0], "task_id": long_id}], schema)
    out = verify_shard(_shard_args(copy))
    assert out["failures"] == [f"shards/00000/answers.parquet: 1 answers of no task ({long_id[:40]}, ...)"]
    assert out["proved"] == 4


def test_the_milp_asked_for_cross_checks_every_row_of_a_shard(sharded_release, crosschecks):
    assert verify_shard(_shard_args(sharded_release, milp="cbc"))["proved"] == 4
    assert crosschecks == ["cbc"] * 4
    crosschecks.clear()
    report = _verify(sharded_release, VerifySettings(SOLVER, "highs", 1))
    assert report.ok and crosschecks == ["highs"] * 8


def test_a_malformed_row_says_what_is_wrong_to_two_hundred_characters(copy):
    path = copy / "shards" / "00000" / "tasks-course.parquet"
    rows, schema = _rows(path)
    rows[0]["domain"] = "z" * 400  # a domain this code does not know, quoted in the error
    _write_rows(path, rows, schema)
    out = verify_shard(_shard_args(copy))
    line, unclaimed = out["failures"]  # the row never got to its answer
    assert unclaimed.startswith("shards/00000/answers.parquet: 1 answers of no task (course-")
    head = "shards/00000/tasks-course.parquet: row 0 malformed: "
    assert line.startswith(head) and len(line) - len(head) <= 200 and len(line) > len(head) + 10


def test_a_count_claimed_capped_below_the_shards_limit_is_named(copy):
    """A tree of N nodes claimed capped at N (counted to N - 1) is true of the tree, so only
    the shards' dfs_node_limit (the generator's default, what every shard is built with) says
    it is not this build's count."""
    path = copy / "shards" / "00000" / "answers.parquet"
    rows, schema = _rows(path)
    measures = dict(rows[0]["measures"])
    assert not measures["dfs_capped"]
    rows[0] = {**rows[0], "measures": {**measures, "dfs_capped": True}}
    _write_rows(path, rows, schema)
    out = verify_shard(_shard_args(copy))
    assert out["task_failures"] == [
        [
            rows[0]["task_id"],
            f"shards/00000/tasks-{rows[0]['task_id'].split('-')[0]}.parquet: measures.dfs_nodes claims "
            f"{measures['dfs_nodes']} (capped: True), which does not fit the shards' dfs_node_limit=50000",
        ]
    ]
    assert out["proved"] == 3


# An outside audit's attacks on a re-signed training set: each is one line naming the file,
# and nothing a loader of the set would read escapes the proofs.


def _answers(copy: Path, shard: str = "00000") -> tuple[Path, list[dict], pa.Schema]:
    path = copy / "shards" / shard / "answers.parquet"
    return (path, *_rows(path))


def _edit_record(copy: Path, shard: str, **changes) -> None:  # type: ignore[no-untyped-def]
    record_path = copy / "shards" / shard / "shard.json"
    record = json.loads(record_path.read_text())
    record.update(changes)
    record_path.write_text(json.dumps(record))


def test_files_listed_in_the_manifest_alone_are_refused(copy):
    """A shard folder of unproved tasks (a loader's `shards/*/...` globs read it), listed in the
    manifest's files with the right digests but in no shard record and no shard entry."""
    extra = copy / "shards" / "zz"
    shutil.copytree(copy / "shards" / "00000", extra)
    (extra / "shard.json").unlink()
    manifest = _manifest(copy)
    for name in ("answers.parquet", "tasks-course.parquet", "tasks-toy.parquet"):
        manifest["files"][f"shards/zz/{name}"] = _sha(extra / name)
    _write_manifest(copy, manifest)
    report = _verify(copy)
    assert report.file_failures == [
        "manifest.json: lists shards/zz/answers.parquet, which is no file of a shard or of the card (3 such)"
    ]
    assert report.shards == {"00000": 4, "00001": 4} and report.proved == 8


def test_a_record_must_list_one_table_per_domain_it_counts_and_the_answers(copy):
    (copy / "shards" / "00000" / "notes.txt").write_text("unproved")
    record = json.loads((copy / "shards" / "00000" / "shard.json").read_text())
    _edit_record(copy, "00000", files={**record["files"], "notes.txt": ""})
    manifest = _manifest(copy)
    manifest["files"]["shards/00000/notes.txt"] = ""
    _write_manifest(copy, manifest)
    _resign(copy, "00000")
    report = _verify(copy)
    assert report.file_failures == [
        "shards/00000/shard.json: its files are not one task table per domain it counts and the answers"
    ]


def _add_domain_table(copy: Path, domain: str, count: int) -> None:
    """Shard 00000 holds a copy of its toy table as ``domain``'s, counted and listed everywhere
    with its digest."""
    shard = copy / "shards" / "00000"
    shutil.copy(shard / "tasks-toy.parquet", shard / f"tasks-{domain}.parquet")
    record = json.loads((shard / "shard.json").read_text())
    files = {**record["files"], f"tasks-{domain}.parquet": ""}
    _edit_record(copy, "00000", files=files, per_domain={**record["per_domain"], domain: count})
    manifest = _manifest(copy)
    manifest["files"][f"shards/00000/tasks-{domain}.parquet"] = ""
    _write_manifest(copy, manifest)
    _resign(copy, "00000")


def test_a_table_of_a_domain_the_recipe_does_not_draw_is_refused(copy):
    _add_domain_table(copy, "meal", 0)
    report = _verify(copy)
    line = "shards/00000/shard.json: counts tasks of a domain its recipe does not draw"
    assert line in report.file_failures


def test_a_second_answer_row_of_a_task_is_named(copy):
    path, rows, schema = _answers(copy)
    _write_rows(path, [rows[0], *rows], schema)
    _resign(copy, "00000")
    report = _verify(copy)
    assert f"shards/00000/answers.parquet: task {rows[0]['task_id']} has more than one answer row" in (
        report.file_failures
    )


@pytest.mark.parametrize("what", ["seed", "id"])
def test_a_proved_task_that_is_not_the_recipe_s_item_is_named(copy, what):
    """The task of another seed (a sound task, proved): its certificate names that seed, or,
    made to name this shard's seed and index, its id is no key of that item."""
    path, rows, schema = _answers(copy)
    task_id = rows[0]["task_id"]
    if what == "seed":
        rows[0]["certificate"] = {**rows[0]["certificate"], "seed": rows[0]["certificate"]["seed"] + 1}
        reason = "its certificate's seed and index name no item of the shard"
    else:
        rows[0]["certificate"] = {**rows[0]["certificate"], "index": 1}
        rows[1]["certificate"] = {**rows[1]["certificate"], "index": 0}
        reason = "not a task the shard's recipe draws (its id is no key of item 1)"
    _write_rows(path, rows, schema)
    _resign(copy, "00000")
    report = _verify(copy)
    assert any(reason in line for line in report.failures[task_id])


@pytest.mark.parametrize("recorded", [True, False])
def test_a_cross_check_is_what_the_recipe_says(copy, recorded):
    """A made-up HiGHS record in a build that ran none; or a config and recipes re-written to
    say every task was cross-checked, where none carries a record."""
    if recorded:
        path, rows, schema = _answers(copy)
        rows[0]["crosscheck"] = {
            "solver": "highs",
            "solver_version": "1.12.0",
            "truth_feasible": True,
            "unique": True,
            "decoys_infeasible": True,
            "most_decoys_used": 0,
            "statuses": [{"key": "unique", "value": "INFEASIBLE"}],
            "ok": True,
        }
        _write_rows(path, rows, schema)
        task_id, reason = rows[0]["task_id"], "a cross-check record, where the recipe says crosscheck=false"
    else:
        manifest = _manifest(copy)
        manifest["config"]["crosscheck"] = True
        _write_manifest(copy, manifest)
        for shard in ("00000", "00001"):
            record = json.loads((copy / "shards" / shard / "shard.json").read_text())
            _edit_record(copy, shard, recipe={**record["recipe"], "crosscheck": True})
        task_id = _answers(copy)[1][0]["task_id"]
        reason = "no cross-check record, where the recipe says crosscheck=true"
    for shard in ("00000", "00001"):
        _resign(copy, shard)
    report = _verify(copy)
    assert any(reason in line for line in report.failures[task_id]), report.failures


def test_a_shard_table_without_its_prompt_column_is_refused(copy):
    path = copy / "shards" / "00000" / "tasks-course.parquet"
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["prompt"]), path)
    _resign(copy, "00000")
    report = _verify(copy)
    assert report.file_failures == [
        "shards/00000/tasks-course.parquet: no prompt column (a training shard's task table has one)"
    ]


@pytest.mark.parametrize(
    "changes, line",
    [
        ({"tasks": 3}, "shards/00000/shard.json: tasks is 3, its recipe's is 4"),
        ({"seed": 1}, "shards/00000/shard.json: seed is 1, its recipe's is"),
        ({"redraws": 2}, "shards/00000/shard.json: redraws is 2, the shard holds 0"),
        ({"per_domain": {"course": 4}}, "shards/00000/shard.json: its files are not one task table"),
    ],
)
def test_what_a_record_says_of_its_shard_is_checked(copy, changes, line):
    _edit_record(copy, "00000", **changes)
    _resign(copy, "00000")
    report = _verify(copy)
    assert any(failure.startswith(line) for failure in report.file_failures), report.file_failures


def test_a_count_of_another_type_is_not_the_count(copy):
    manifest = _manifest(copy)
    manifest["counts"]["tasks"] = 8.0
    _write_manifest(copy, manifest)
    report = _verify(copy)
    assert "manifest.json: counts.tasks is 8.0, the shards hold 8" in report.file_failures


def test_a_table_of_no_known_domain_is_named_by_its_file(copy):
    _add_domain_table(copy, "nosuch", 1)
    report = _verify(copy)
    assert any(line.startswith("shards/00000/tasks-nosuch.parquet: ") for line in report.file_failures)
