"""Verify's consistency checks, one at a time, on the tiny hand-built task (tests/tiny.py): each
damage alone is named and stops the task before any proof; the untouched pair proves. Then the
release-level rule that a file whose digest failed is neither decompressed nor proved."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gridbench_core.task import SlotRoles
from pipeline.storage.verification import VerifySettings, consistency, prove_data, task_shape, verify_release
from solvers.results import SolverSettings
from tests import parse_source
from tests.helpers_release import copy_release
from tests.tiny import ANSWER, TASK, TRUTH

REL = "tasks/toy/toy-tiny.json"
SOLVER = SolverSettings(time_limit_s=30.0)


def _roles(**changes):
    roles = {(r.row, r.col): r for r in ANSWER.roles}
    for key, role in changes.items():
        roles[tuple(int(x) for x in key[1:].split("_"))] = role
    return tuple(r for r in roles.values() if r is not None)


def _truth(cells: dict):
    grid = [list(row) for row in TRUTH]
    for (row, col), value in cells.items():
        grid[row][col] = value
    return tuple(tuple(row) for row in grid)


def test_the_tiny_pair_passes_every_check_and_proves():
    assert consistency(TASK, ANSWER) == [] and task_shape(TASK, REL) == []
    assert prove_data(TASK.to_dict(), _with_certificate(ANSWER), REL, SOLVER, "highs") == (
        "toy-tiny",
        "toy",
        [],
    )


def _with_certificate(answer) -> dict:
    """The answer file (the schema wants a certificate record; verify proves it again)."""
    data = answer.to_dict()
    data["certificate"] = {
        "ok": True,
        "solver": "ortools-cp-sat",
        "solver_version": "x",
        "solver_seed": 0,
        "workers": 1,
        "truth_feasible": "FEASIBLE",
        "uniqueness": "INFEASIBLE",
        "decoys_refuted": "INFEASIBLE",
        "decoys_checked": 4,
        "filtered_checked": 1,
    }
    return data


ANSWER_DAMAGE = {
    "a decoy too many": (dataclasses.replace(TASK, decoy_budget=3), ANSWER, "4 decoys but decoy_budget=3"),
    "a decoy too few": (dataclasses.replace(TASK, decoy_budget=5), ANSWER, "4 decoys but decoy_budget=5"),
    "a truth that changes a visible cell": (
        TASK,
        dataclasses.replace(ANSWER, truth=_truth({(1, 1): "V10"})),
        "truth changes visible cell (1,1)",
    ),
    "a decoy called filtered": (
        TASK,
        dataclasses.replace(ANSWER, roles=_roles(c0_1=SlotRoles(0, 1, "C", ("A",), ("B", "D")))),
        "3 decoys but decoy_budget=4",
    ),
    "a candidate in no role": (
        TASK,
        dataclasses.replace(ANSWER, roles=_roles(c0_1=SlotRoles(0, 1, "C", ("A", "D"), ()))),
        "roles of (0,1) do not match its candidates",
    ),
    "a role naming an item the cell does not offer": (
        TASK,
        dataclasses.replace(ANSWER, roles=_roles(c1_2=SlotRoles(1, 2, "G", ("E", "A"), ("F",)))),
        "roles of (1,2) do not match its candidates",
    ),
    "a role for a fixed cell": (
        TASK,
        dataclasses.replace(ANSWER, roles=(*ANSWER.roles, SlotRoles(0, 0, "V00", (), ()))),
        "role for (0,0) which is not hidden",
    ),
    "a truth grid that disagrees with the roles": (
        TASK,
        dataclasses.replace(ANSWER, truth=_truth({(0, 1): "A"})),
        "truth grid and roles disagree at (0,1)",
    ),
    "the answer of another task": (
        TASK,
        dataclasses.replace(ANSWER, task_id="toy-other"),
        "answer is for task 'toy-other'",
    ),
}


@pytest.mark.parametrize("case", sorted(ANSWER_DAMAGE))
def test_each_inconsistency_is_named_and_nothing_is_proved(case):
    task, answer, message = ANSWER_DAMAGE[case]
    problems = consistency(task, answer)
    assert message in problems, problems
    assert consistency(TASK, ANSWER) == []
    task_id, domain, reasons = prove_data(task.to_dict(), _with_certificate(answer), REL, SOLVER, "highs")
    assert (task_id, domain) == ("toy-tiny", "toy") and message in reasons
    assert not any("UNKNOWN" in r or "disagrees" in r or "second solution" in r for r in reasons)


def _slots(*candidates: tuple[str, ...]):
    return tuple(dataclasses.replace(s, candidates=c) for s, c in zip(TASK.slots, candidates, strict=True))


SHAPE_DAMAGE = {
    "a slot with too few candidates": (
        dataclasses.replace(TASK, candidates_per_slot=4),
        REL,
        "cell (1,2) has 3 candidates, not candidates_per_slot=4",
    ),
    "a slot with too many candidates": (
        dataclasses.replace(TASK, candidates_per_slot=3),
        REL,
        "cell (0,1) has 4 candidates, not candidates_per_slot=3",
    ),
    "a candidate listed twice": (
        dataclasses.replace(TASK, slots=_slots(("A", "B", "C", "D"), ("E", "F", "F"))),
        REL,
        "cell (1,2) lists a candidate twice",
    ),
    "a task in another domain's folder": (
        TASK,
        "tasks/course/toy-tiny.json",
        "file tasks/course/toy-tiny.json holds task toy-tiny of domain toy",
    ),
    "a task under another id": (
        TASK,
        "tasks/toy/toy-other.json",
        "file tasks/toy/toy-other.json holds task toy-tiny of domain toy",
    ),
    "an edited instruction": (
        dataclasses.replace(TASK, instruction=TASK.instruction + " Call done at once."),
        REL,
        "the instruction is not what the task's rules render to (edited?)",
    ),
    "an empty instruction": (  # the schema takes "": only the rendering can refuse it
        dataclasses.replace(TASK, instruction=""),
        REL,
        "the instruction is not what the task's rules render to (edited?)",
    ),
}


@pytest.mark.parametrize("case", sorted(SHAPE_DAMAGE))
def test_each_shape_problem_is_named(case):
    task, rel, message = SHAPE_DAMAGE[case]
    assert message in task_shape(task, rel), task_shape(task, rel)
    reasons = prove_data(task.to_dict(), _with_certificate(ANSWER), rel, SOLVER, None)[2]
    assert message in reasons


def test_a_candidates_per_slot_of_zero_checks_no_count():
    assert task_shape(dataclasses.replace(TASK, candidates_per_slot=0), REL) == []
    assert (
        task_shape(dataclasses.replace(TASK, slots=_slots(("A", "B", "C", "D"), ("E", "F", "G"))), REL) == []
    )


@pytest.fixture(scope="session")
def small(small_release) -> Path:
    return small_release


def _garble(path: Path) -> None:
    path.write_bytes(b"PAR1" + b"\x00garbage" * 64 + b"PAR1")


def test_files_with_a_stale_digest_are_neither_decompressed_nor_proved(small, tmp_path):
    """Files changed after signing: the digest failure is the one message for each; no table
    or metadata file is decompressed, and a changed task file is never proved (a proof of a
    file that no longer matches its digest would vouch for content nobody signed)."""
    copy = copy_release(small, tmp_path / "copy")
    task_file = sorted((copy / "tasks").rglob("*.json"))[0]
    data = json.loads(task_file.read_text())
    data["global_constraints"][0]["bound"] += 1000  # a changed, still well-formed task
    task_file.write_text(json.dumps(data))
    table = sorted((copy / "data" / "tasks").glob("*.parquet"))[0]
    for damaged in (copy / "metadata.parquet", copy / "data" / "answers.parquet", table):
        _garble(damaged)
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    stale = {
        f"{p.relative_to(copy).as_posix()}: digest mismatch (file changed)"
        for p in (task_file, copy / "metadata.parquet", copy / "data" / "answers.parquet", table)
    }
    assert stale <= set(report.file_failures), report.file_failures
    assert not any("unreadable" in f or "Parquet" in f or "rows" in f for f in report.file_failures)
    assert data["task_id"] not in report.tasks and data["task_id"] not in report.failures
    assert len(report.tasks) == 7 and not report.failures and not report.ok


def test_files_are_checked_against_the_manifest(tmp_path):
    from pipeline.storage.layout import sha256
    from pipeline.storage.verification import VerifyReport, check_files

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "a.json").write_bytes(b"a")
    (tmp_path / "tasks" / "b.json").write_bytes(b"b")
    (tmp_path / "stray.txt").write_bytes(b"s")
    (tmp_path / "manifest.json").write_bytes(b"{}")
    manifest = {
        "files": {"tasks/a.json": sha256(b"a"), "tasks/b.json": sha256(b"x"), "tasks/gone.json": "0" * 64}
    }
    report = VerifyReport()
    assert check_files(tmp_path, manifest, report) == {"tasks/a.json"}
    assert report.file_failures == [
        "tasks/b.json: digest mismatch (file changed)",
        "tasks/gone.json: missing (listed in the manifest)",
        "stray.txt: not listed in the manifest",
    ]
    assert not report.ok and report.tasks == {}


def test_release_counts_folders_and_pairs(tmp_path):
    from pipeline.storage.verification import VerifyReport, check_release

    listed = [
        "tasks/toy/a.json",
        "answers/toy/a.json",
        "tasks/toy/b.json",
        "tasks/flat.json",
        "answers/course/c.json",
    ]
    manifest = {"files": dict.fromkeys(listed, "0" * 64), "counts": {"tasks": 5, "per_domain": {"toy": 1}}}
    report = VerifyReport()
    assert check_release(tmp_path, manifest, report, sound=set()) == ["tasks/toy/a.json", "tasks/toy/b.json"]
    # the structural findings first, then the claims a hand-made manifest cannot back (name,
    # version, config, ...: tests/pipeline/storage/test_claims_hostile.py)
    assert report.file_failures[:8] == [
        "manifest.json: counts.tasks=5 but 3 task files are listed",
        "manifest.json: counts.per_domain={'toy': 1} but the task files give {'toy': 2}",
        "tasks/flat.json: task files live at tasks/<domain>/<task_id>.json",
        "tasks/toy/b.json: its answer file is not listed",
        "answers/course/c.json: an answer without a task file",
        "manifest.json: metadata.parquet is not listed",
        "manifest.json: data/answers.parquet is not listed (rebuild the release to add data/ tables)",
        "manifest.json: data/tasks/toy.parquet is not listed (rebuild the release to add data/ tables)",
    ]
    empty = VerifyReport()
    assert check_release(tmp_path, {"files": {}, "counts": {"tasks": 0}}, empty) == []
    assert "manifest.json: the release lists no task" in empty.file_failures
    agreeing = VerifyReport()
    check_release(tmp_path, {**manifest, "counts": {"tasks": 3, "per_domain": {"toy": 2}}}, agreeing, set())
    assert not any(
        f.startswith(("manifest.json: counts.tasks", "manifest.json: counts.per_domain"))
        for f in agreeing.file_failures
    )


def _resign(release: Path, *relatives: str) -> None:
    import hashlib

    manifest = json.loads((release / "manifest.json").read_text())
    for relative in relatives:
        manifest["files"][relative] = hashlib.sha256((release / relative).read_bytes()).hexdigest()
    (release / "manifest.json").write_text(json.dumps(manifest))


def test_a_repeated_table_row_and_lying_metadata_rows_are_named(small, tmp_path):
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = copy_release(small, tmp_path / "copy")
    answers = pq.read_table(copy / "data" / "answers.parquet")
    pq.write_table(pa.concat_tables([answers, answers.slice(0, 1)]), copy / "data" / "answers.parquet")
    meta = pl.read_parquet(copy / "metadata.parquet")
    toy = meta.filter(pl.col("domain") == "toy")["task_id"].to_list()
    meta = meta.with_columns(
        pl.when(pl.col("task_id") == toy[0])
        .then(pl.lit("0" * 64))
        .otherwise(pl.col("task_sha256"))
        .alias("task_sha256"),
        pl.when(pl.col("task_id") == toy[1])
        .then(pl.lit("course"))
        .otherwise(pl.col("domain"))
        .alias("domain"),
    )
    meta.write_parquet(copy / "metadata.parquet")
    _resign(copy, "metadata.parquet", "data/answers.parquet")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    repeated = answers.num_rows
    assert (
        f"data/answers.parquet: row {repeated} ({answers['task_id'][0]}) is not one of its files, or repeats"
        in (report.file_failures)
    )
    assert f"metadata.parquet: the digests of {toy[0]} differ from its files" in report.file_failures
    assert f"metadata.parquet: {toy[1]}: domain differ from its files" in report.file_failures
    assert (
        f"metadata.parquet: {toy[1]} is in domain 'course' but its file is under toy/" in report.file_failures
    )
    assert len(report.tasks) == 8 and not report.failures  # every task itself still proves


def test_one_task_id_in_two_domains_is_named(small, tmp_path):
    copy = copy_release(small, tmp_path / "copy")
    toy = sorted((copy / "tasks" / "toy").glob("*.json"))[0]
    course = sorted((copy / "tasks" / "course").glob("*.json"))[0]
    twin = course.with_name(toy.name)
    for kind in ("tasks", "answers"):
        source = copy / kind / "course" / course.name
        data = json.loads(source.read_text())
        data["task_id"] = toy.stem
        (copy / kind / "course" / twin.name).write_text(json.dumps(data))
        source.unlink()
    manifest = json.loads((copy / "manifest.json").read_text())
    for kind in ("tasks", "answers"):
        del manifest["files"][f"{kind}/course/{course.name}"]
        manifest["files"][f"{kind}/course/{twin.name}"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    _resign(copy, f"tasks/course/{twin.name}", f"answers/course/{twin.name}")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    (reason,) = report.failures[toy.stem]  # one of the two is proved; the other is named
    assert reason.startswith("the task id appears twice (") and reason.endswith(" and again)")


def test_one_verifier_api_below_the_entry_point():
    """``verify_release(path, settings)`` is the one public verifier (plain and sharded); the
    modules below ``gridbench.commands.verify`` take typed settings and never see an OmegaConf object."""
    import ast
    import inspect

    import pipeline.storage.shards as shards
    import pipeline.storage.verification as verification

    assert list(inspect.signature(verify_release).parameters) == ["path", "settings"]
    assert not hasattr(shards, "verify_sharded")
    for module in (shards, verification):
        tree = parse_source(inspect.getsource(module))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
        }
        assert not imported & {"omegaconf", "hydra"}, module.__name__


BAD = "\x1b[2J"  # a terminal escape: clears the screen of whoever reads the message


def _unsafe(task) -> list[str]:
    from pipeline.storage.verification import unsafe_strings

    return unsafe_strings(task)


def test_a_word_that_cannot_be_shown_is_named_wherever_the_task_holds_it():
    from gridbench_core.task import GlobalRule, SlotRule

    item = {**TASK.items["A"]}
    rules = TASK.global_constraints
    slot = TASK.slots[1]
    cases = {
        "task id": (dataclasses.replace(TASK, task_id="toy-" + BAD), "task id 'toy-\\x1b[2J'"),
        "item id": (
            dataclasses.replace(TASK, items={**TASK.items, "A" + BAD: {**item, "id": "A" + BAD}}),
            "item id 'A\\x1b[2J'",
        ),
        "attribute name": (
            dataclasses.replace(TASK, items={**TASK.items, "A": {**item, "co" + BAD: 1}}),
            "an attribute name 'co\\x1b[2J'",
        ),
        "value": (
            dataclasses.replace(TASK, items={**TASK.items, "A": {**item, "color": "red" + BAD}}),
            "item 'A' 'color' 'red\\x1b[2J'",
        ),
        "global rule name": (
            dataclasses.replace(TASK, global_constraints=(GlobalRule("n" + BAD, "sum_max", "cost", 1),)),
            "a global rule's 'n\\x1b[2J'",
        ),
        "global rule attribute": (
            dataclasses.replace(TASK, global_constraints=(GlobalRule("n", "sum_max", "c" + BAD, 1),)),
            "a global rule's 'c\\x1b[2J'",
        ),
        "global rule word": (
            dataclasses.replace(
                TASK, global_constraints=(*rules[:2], dataclasses.replace(rules[2], equals="b" + BAD))
            ),
            "a global rule's 'b\\x1b[2J'",
        ),
        "slot rule attribute": (
            dataclasses.replace(
                TASK,
                slots=(TASK.slots[0], dataclasses.replace(slot, constraints=(SlotRule("w" + BAD, ">=", 2),))),
            ),
            "a slot rule of (1,2) 'w\\x1b[2J'",
        ),
        "slot rule word": (
            dataclasses.replace(
                TASK,
                slots=(
                    TASK.slots[0],
                    dataclasses.replace(slot, constraints=(SlotRule("color", "in", ("red", "b" + BAD)),)),
                ),
            ),
            "a slot rule of (1,2) 'b\\x1b[2J'",
        ),
    }
    for case, (task, named) in cases.items():
        found = _unsafe(task)
        assert found == [f"{named} cannot be shown safely: a control or invisible character U+001B"], case
    # an item's own "id" value is its id, checked once as one (under its key)
    fine_key = dataclasses.replace(TASK, items={**TASK.items, "A": {**item, "id": "A" + BAD}})
    assert _unsafe(fine_key) == []
    assert _unsafe(TASK) == []


def test_words_are_quoted_to_forty_characters_limits_are_exact_and_at_most_three_are_named():
    long_id = "toy-" + "x" * 96  # 100 characters: the most an id may have
    assert _unsafe(dataclasses.replace(TASK, task_id=long_id)) == []
    assert _unsafe(dataclasses.replace(TASK, task_id=long_id + "x")) == [
        f"task id {ascii(long_id[:40])} cannot be shown safely: 101 characters (at most 100)"
    ]
    item = TASK.items["A"]
    name = "n" * 200  # the most a name or other word may have
    assert _unsafe(dataclasses.replace(TASK, items={**TASK.items, "A": {**item, "name": name}})) == []
    assert _unsafe(dataclasses.replace(TASK, items={**TASK.items, "A": {**item, "name": name + "n"}})) == [
        f"item 'A' 'name' {ascii(name[:40])} cannot be shown safely: 201 characters (at most 200)"
    ]
    items = {k: {**v, "name": v["name"] + BAD} for k, v in TASK.items.items()}  # eleven bad names
    found = _unsafe(dataclasses.replace(TASK, items=items))
    assert [line.split(" ")[1] for line in found] == ["'V00'", "'V02'", "'V10'"]


def test_a_task_of_a_domain_this_code_does_not_know_says_so_after_its_other_problems():
    problems = task_shape(dataclasses.replace(TASK, domain="chess"), REL)
    assert problems[0] == "file tasks/toy/toy-tiny.json holds task toy-tiny of domain chess"
    assert len(problems) == 2 and "chess" in problems[1]


def test_schema_errors_are_at_most_five_and_name_the_task_when_its_id_can_be_shown():
    task = TASK.to_dict()
    broken = {
        **task,
        "rows": "two",
        "cols": "three",
        "decoy_budget": "four",
        "grid": 7,
        "slots": 8,
        "items": 9,
    }
    task_id, domain, reasons = prove_data(broken, _with_certificate(ANSWER), REL, SOLVER, None)
    assert (task_id, domain) == ("toy-tiny", "?") and len(reasons) == 5
    assert all(r.startswith("schema error in task file at [") for r in reasons), reasons
    assert all(len(r) <= len("schema error in task file at []: ") + 60 + 160 for r in reasons)
    for named in ("x" * 100, 7, None):
        odd = {**broken, "task_id": named}
        assert prove_data(odd, _with_certificate(ANSWER), REL, SOLVER, None)[:2] == (REL, "?")
    assert (
        prove_data({**broken, "task_id": "x" * 99}, _with_certificate(ANSWER), REL, SOLVER, None)[0]
        == "x" * 99
    )
    answer = _with_certificate(ANSWER)
    answer["truth"] = "none"
    task_id, domain, reasons = prove_data(task, answer, REL, SOLVER, None)
    assert (task_id, domain) == ("toy-tiny", "?") and reasons[0].startswith(
        "schema error in answer file at ['truth']"
    )
    (reason,) = prove_data({**task, "rows": "x" * 500}, _with_certificate(ANSWER), REL, SOLVER, None)[2]
    assert reason.startswith("schema error in task file at ['rows']: 'xxx")
    assert len(reason) == len("schema error in task file at ['rows']: ") + 160


def test_a_dropped_table_row_a_dropped_metadata_row_and_a_lying_answer_digest_are_counted_exactly(
    small, tmp_path
):
    import polars as pl
    import pyarrow.parquet as pq

    copy = copy_release(small, tmp_path / "copy")
    toy = copy / "data" / "tasks" / "toy.parquet"
    pq.write_table(pq.read_table(toy).slice(1), toy)
    meta = pl.read_parquet(copy / "metadata.parquet")
    meta.slice(1).write_parquet(copy / "metadata.parquet")
    _resign(copy, "data/tasks/toy.parquet", "metadata.parquet")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    assert "data/tasks/toy.parquet: 1 of its 4 files have no row" in report.file_failures
    assert "metadata.parquet: its rows (7) are not the 8 tasks listed" in report.file_failures
    assert len(report.tasks) == 8 and not report.failures

    lying = copy_release(small, tmp_path / "lying")
    first = meta["task_id"][0]
    meta.with_columns(
        pl.when(pl.col("task_id") == first)
        .then(pl.lit("0" * 64))
        .otherwise(pl.col("answer_sha256"))
        .alias("answer_sha256")
    ).write_parquet(lying / "metadata.parquet")
    _resign(lying, "metadata.parquet")
    failures = verify_release(lying, VerifySettings(SOLVER, None, 1)).file_failures
    assert f"metadata.parquet: the digests of {first} differ from its files" in failures
    assert not any(f.startswith(f"metadata.parquet: {first}:") for f in failures)  # one line for it


def test_a_table_of_a_domain_this_code_does_not_know_is_named(tmp_path):
    from pipeline.storage.verification import VerifyReport, check_release

    listed = [
        "tasks/chess/a.json",
        "answers/chess/a.json",
        "data/tasks/chess.parquet",
        "data/answers.parquet",
    ]
    manifest = {"files": dict.fromkeys(listed, "0" * 64), "counts": {"tasks": 1, "per_domain": {"chess": 1}}}
    report = VerifyReport()
    assert check_release(tmp_path, manifest, report, sound=set(listed)) == ["tasks/chess/a.json"]
    assert "data/tasks/chess.parquet: a table of a domain this code does not know" in report.file_failures
    counted = ("manifest.json: counts.tasks", "manifest.json: counts.per_domain")
    assert not any(f.startswith(counted) for f in report.file_failures)


def test_a_folder_without_a_manifest_is_no_release_and_a_broken_manifest_is_one_failure(tmp_path):
    from pipeline.storage.safe import ReleaseError

    with pytest.raises(ReleaseError):
        verify_release(tmp_path, VerifySettings(SOLVER, None, 1))
    (tmp_path / "manifest.json").write_text("{not json")
    report = verify_release(tmp_path, VerifySettings(SOLVER, None, 1))
    assert len(report.file_failures) == 1 and "manifest.json" in report.file_failures[0]
    assert not report.ok and report.tasks == {} and not report.failures


def test_metadata_seed_and_index_are_the_certificate_s_or_for_an_import_the_row_s_own(small, tmp_path):
    """A build's certificate records its key's seed and index, so a row saying otherwise is
    named; an imported task's certificate has none, and its row's own are checked elsewhere
    (against its config): every other column is still compared."""
    import polars as pl

    from pipeline.storage.layout import sha256
    from pipeline.storage.verification import _metadata_differs

    copy = copy_release(small, tmp_path / "copy")
    row = pl.read_parquet(copy / "metadata.parquet").row(0, named=True)
    name = f"tasks/{row['domain']}/{row['task_id']}.json"
    answer = "answers/" + name[len("tasks/") :]
    assert _metadata_differs(copy, row, name, answer) == ""
    moved = {**row, "seed": row["seed"] + 1, "index": row["index"] + 1}
    assert _metadata_differs(copy, moved, name, answer) == "index, seed"
    data = json.loads((copy / answer).read_text())
    data["certificate"]["seed"] = data["certificate"]["index"] = None  # as an import writes it
    (copy / answer).write_text(json.dumps(data))
    imported = {**moved, "answer_sha256": sha256((copy / answer).read_bytes())}
    assert _metadata_differs(copy, imported, name, answer) == ""
    lying = {**imported, "hidden_slots": row["hidden_slots"] + 1}
    assert _metadata_differs(copy, lying, name, answer) == "hidden_slots"


def test_a_pair_that_cannot_be_read_or_parsed_is_one_reason_under_its_file_name(tmp_path):
    from pipeline.storage.verification import prove_one

    for kind in ("tasks", "answers"):
        (tmp_path / kind / "toy").mkdir(parents=True)
    (tmp_path / "answers" / REL[len("tasks/") :]).write_text(json.dumps(_with_certificate(ANSWER)))
    job = (str(tmp_path), REL, "answers/" + REL[len("tasks/") :], SOLVER, None)
    assert prove_one(job) == (REL, "?", [f"{REL}: missing"])
    task = {**TASK.to_dict(), "rows": 5}  # the schema's types, but not the grid's shape
    (tmp_path / REL).write_text(json.dumps(task))
    assert prove_one(job) == (REL, "?", ["malformed: TaskFormatError: task toy-tiny: grid is not 5 x 3"])
    (tmp_path / REL).write_text(json.dumps({**task, "task_id": "toy-" + "y" * 300}))
    _, _, (reason,) = prove_one(job)
    message = "task toy-" + "y" * 300 + ": grid is not 5 x 3"
    assert reason == "malformed: TaskFormatError: " + message[:200]


def test_the_answer_of_another_task_is_named_by_forty_characters_of_its_id():
    other = "toy-" + "z" * 60
    problems = consistency(TASK, dataclasses.replace(ANSWER, task_id=other))
    assert problems == [f"answer is for task {ascii(other[:40])}"]


def test_the_item_and_attribute_a_bad_value_sits_under_are_quoted_to_forty_characters():
    item_id, key = "I" * 50, "k" * 50
    items = {**TASK.items, item_id: {**TASK.items["A"], "id": item_id, key: "v" + BAD}}
    assert _unsafe(dataclasses.replace(TASK, items=items)) == [
        f"item {ascii(item_id[:40])} {ascii(key[:40])} 'v\\x1b[2J' cannot be shown safely: "
        "a control or invisible character U+001B"
    ]


@pytest.mark.parametrize("milp", ["highs", None])
def test_the_milp_asked_for_cross_checks_every_task_and_none_means_none(small, crosschecks, milp):
    """A cross-check asked for is run on every task (a verify that dropped it would still
    pass every sound release); one not asked for is never run."""
    report = verify_release(small, VerifySettings(SOLVER, milp, 1))
    assert report.ok and report.proved == 8
    assert crosschecks == ([milp] * 8 if milp else [])
    assert set(report.tasks.values()) == {"toy", "course"}
    assert all(task_id.startswith(domain + "-") for task_id, domain in report.tasks.items())


def _with_rules(rules) -> dict:
    from domains import get_domain
    from gridbench_core.task import GlobalRule  # noqa: F401  (rules are GlobalRule)
    from pipeline.generation.instruction import write_instruction

    task = dataclasses.replace(
        TASK,
        global_constraints=tuple(rules),
        instruction=write_instruction(
            get_domain("toy"), 2, 3, list(rules), {(s.row, s.col): list(s.constraints) for s in TASK.slots}
        ),
    )
    return task.to_dict()


def test_a_failed_certificate_is_cross_checked_on_its_own_and_both_are_named():
    """The certificate fails (three completions; or no completion at all): with a MILP asked
    for, it is run on its own and its disagreement is a reason too, with the second solution
    it found when it found one; without one, only the certificate speaks."""
    from gridbench_core.task import GlobalRule
    from tests.tiny import OPEN_TASK

    answer = _with_certificate(ANSWER)
    certificate_open = [
        "a second solution exists: (0,1)=D, (1,2)=G",
        "decoy A at (0, 1) is not refuted (FEASIBLE)",
        "decoy D at (0, 1) is not refuted (FEASIBLE)",
    ]
    open_task = _with_rules(OPEN_TASK.global_constraints)
    assert prove_data(open_task, answer, REL, SOLVER, None) == ("toy-tiny", "toy", certificate_open)
    assert prove_data(open_task, answer, REL, SOLVER, "highs") == (
        "toy-tiny",
        "toy",
        [
            *certificate_open,
            "highs disagrees: {'truth': 'FEASIBLE', 'other': 'FEASIBLE', 'most_decoys': 'FEASIBLE'}, "
            "second solution {'0,1': 'D', '1,2': 'G'}",
        ],
    )
    impossible = _with_rules((GlobalRule("total_weight_min", "sum_min", "weight", 100),))
    assert prove_data(impossible, answer, REL, SOLVER, "cbc") == (
        "toy-tiny",
        "toy",
        [
            "truth is not a feasible completion (INFEASIBLE)",
            "cbc disagrees: {'truth': 'INFEASIBLE', 'other': 'INFEASIBLE', 'most_decoys': 'INFEASIBLE'}",
        ],
    )


def test_a_task_file_that_is_no_mapping_is_named_by_its_path():
    task_rel, domain, reasons = prove_data(["not", "a", "task"], _with_certificate(ANSWER), REL, SOLVER, None)
    assert (task_rel, domain) == (REL, "?") and reasons[0].startswith("schema error in task file at []: ")


def test_the_same_id_twice_names_the_domain_proved_first(small, tmp_path):
    copy = copy_release(small, tmp_path / "copy")
    toy = sorted((copy / "tasks" / "toy").glob("*.json"))[0]
    for kind in ("tasks", "answers"):
        data = json.loads((copy / kind / "toy" / toy.name).read_text())
        (copy / kind / "course" / toy.name).write_text(json.dumps({**data, "domain": "course"}))
    # the copy in the course folder fails its own checks (it is a toy task): the id is what counts
    manifest = json.loads((copy / "manifest.json").read_text())
    for kind in ("tasks", "answers"):
        manifest["files"][f"{kind}/course/{toy.name}"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    _resign(copy, f"tasks/course/{toy.name}", f"answers/course/{toy.name}")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    # tasks/course/ sorts first: the copy there is proved (and fails its own checks) first,
    # then the sound toy task is named by the domain that came first
    assert "the task id appears twice (course and again)" in report.failures[toy.stem]
    assert report.tasks[toy.stem] == "toy"


def test_files_are_read_past_a_bad_one_and_earlier_failures_are_kept(tmp_path):
    import os

    from pipeline.storage.layout import sha256
    from pipeline.storage.verification import VerifyReport, check_files

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "a.json").write_bytes(b"a")
    (tmp_path / "tasks" / "folder.json").mkdir()
    os.symlink(tmp_path / "tasks" / "a.json", tmp_path / "tasks" / "z.json")
    manifest = {
        "files": {"tasks/0.json": "0" * 64, "tasks/a.json": sha256(b"a"), "tasks/folder.json": "0" * 64}
    }
    report = VerifyReport(file_failures=["an earlier failure"])
    assert check_files(tmp_path, manifest, report) == {"tasks/a.json"}
    assert report.file_failures == [
        "an earlier failure",
        "tasks/z.json: a symlink, which a release may not hold",
        "tasks/0.json: missing (listed in the manifest)",
        "tasks/folder.json: not a regular file (a FIFO, device or folder)",
    ]


def test_metadata_that_cannot_be_read_is_one_line_naming_why(small, tmp_path, monkeypatch):
    import polars as pl

    copy = copy_release(small, tmp_path / "copy")
    _garble(copy / "metadata.parquet")
    _resign(copy, "metadata.parquet")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    assert [f for f in report.file_failures if f.startswith("metadata.parquet")] == [
        "metadata.parquet: unreadable Parquet (ArrowInvalid)"
    ]
    again = copy_release(small, tmp_path / "again")
    meta = pl.read_parquet(again / "metadata.parquet").drop("depth")
    meta.write_parquet(again / "metadata.parquet")
    _resign(again, "metadata.parquet")
    report = verify_release(again, VerifySettings(SOLVER, None, 1))
    assert [f for f in report.file_failures if f.startswith("metadata.parquet")] == [
        "metadata.parquet: its columns are not the declared ones (a column added, dropped or retyped)"
    ]

    def broken(table):
        raise pl.exceptions.ComputeError("damaged")

    monkeypatch.setattr(pl, "from_arrow", broken)  # polars refusing what Arrow read
    report = verify_release(small, VerifySettings(SOLVER, None, 1))
    assert [f for f in report.file_failures if f.startswith("metadata.parquet")] == [
        "metadata.parquet: unreadable (ComputeError)"
    ]


def test_a_metadata_row_whose_files_do_not_parse_is_left_to_their_own_checks(small):
    from pipeline.storage.verification import _metadata_differs

    assert _metadata_differs(small, {}, "tasks/toy/none.json", "answers/toy/none.json") == ""
    assert _metadata_differs(small, {}, "manifest.json", "manifest.json") == ""


def test_tables_are_checked_past_a_damaged_table_and_a_bad_row(small, tmp_path):
    """The answers table's digest fails (never decompressed); the toy table, read after it,
    gets a first row of no task and a row that cannot be decoded, each named alone and the
    rows after them still read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = copy_release(small, tmp_path / "copy")
    _garble(copy / "data" / "answers.parquet")  # not signed again: its digest fails
    path = copy / "data" / "tasks" / "toy.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    stranger = {**rows[0], "task_id": "toy-" + "s" * 60}
    broken = {**rows[1], "domain": "chess"}  # decoding asks for a domain this code knows
    pq.write_table(pa.Table.from_pylist([stranger, broken, *rows[:1], *rows[2:]], schema=table.schema), path)
    _resign(copy, "data/tasks/toy.parquet")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    toy = [f for f in report.file_failures if f.startswith("data/tasks/toy.parquet")]
    assert (
        toy[0]
        == f"data/tasks/toy.parquet: row 0 ({stranger['task_id'][:40]}) is not one of its files, or repeats"
    )
    assert toy[1].startswith(f"data/tasks/toy.parquet: row 1 ({rows[1]['task_id']}) unreadable (")
    assert toy[1].endswith("Error)") and "None" not in toy[1]
    assert toy[2:] == []  # every file has its row: the rows after the bad ones were read
    assert "data/answers.parquet: digest mismatch (file changed)" in report.file_failures


def test_a_table_that_cannot_be_read_or_is_another_table_is_named_by_its_path(small, tmp_path):
    import shutil

    copy = copy_release(small, tmp_path / "copy")
    _garble(copy / "data" / "tasks" / "toy.parquet")
    shutil.copy(copy / "metadata.parquet", copy / "data" / "answers.parquet")
    _resign(copy, "data/tasks/toy.parquet", "data/answers.parquet")
    report = verify_release(copy, VerifySettings(SOLVER, None, 1))
    data = [f for f in report.file_failures if f.startswith("data/")]
    assert data[0].startswith("data/answers.parquet: its columns are not the declared ones (found ")
    assert data[1] == "data/tasks/toy.parquet: unreadable Parquet (ArrowInvalid)"
    assert len(data) == 2


def test_progress_names_the_release(small, capsys):
    assert verify_release(small, VerifySettings(SOLVER, None, 1)).ok
    assert f"verify {small.name}: 8/8 tasks" in capsys.readouterr().out


def test_a_change_to_any_visible_cell_is_named_at_that_cell():
    """Every visible cell, edges and corners included, each changed alone, then all at once."""
    visible = [(r, c) for r, row in enumerate(TASK.grid) for c, cell in enumerate(row) if cell is not None]
    assert visible == [(0, 0), (0, 2), (1, 0), (1, 1)]
    for r, c in visible:
        changed = dataclasses.replace(ANSWER, truth=_truth({(r, c): "V99"}))
        assert consistency(TASK, changed) == [f"truth changes visible cell ({r},{c})"]
    every = dataclasses.replace(ANSWER, truth=_truth(dict.fromkeys(visible, "V99")))
    assert consistency(TASK, every) == [f"truth changes visible cell ({r},{c})" for r, c in visible]
