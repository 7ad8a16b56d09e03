"""Verify against releases whose manifest lies, or whose words cannot be shown safely. Each
case edits a copy of a tiny release the way an attacker would, re-signs every digest, and
checks that the claim is refused with one line naming it (the claims need no proof, so most
cases run the file and release checks alone; one goes through the whole command)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.helpers_release import compose_config, copy_release, redigest
from tests.hostile import snapshot


@pytest.fixture(scope="module")
def tiny(tiny_release, tmp_path_factory) -> Path:
    """The shared tiny release, once checked to carry no refused claim when copied elsewhere:
    the tests damage copies of these same bytes (a copy is clean until its damage)."""
    copy = copy_release(tiny_release, tmp_path_factory.mktemp("clean") / "copy")
    assert _claim_failures(copy) == ([], [])
    return tiny_release


def _manifest(release: Path) -> dict:
    return json.loads((release / "manifest.json").read_text())


def _edit_manifest(release: Path, change) -> None:
    manifest = _manifest(release)
    change(manifest)
    (release / "manifest.json").write_text(json.dumps(manifest))


def _claim_failures(release: Path) -> tuple[list[str], list[str]]:
    """The file and release failures of ``release`` (no proofs), and what is unverified."""
    from pipeline.storage.read import read_manifest
    from pipeline.storage.verification import VerifyReport, check_files, check_release

    report = VerifyReport()
    try:
        manifest = read_manifest(release)
    except Exception as error:
        return [str(error)], []
    sound = check_files(release, manifest, report)
    check_release(release, manifest, report, sound)
    return report.file_failures, report.unverified


def _timings(release: Path, change) -> None:
    import polars as pl

    frame = pl.read_parquet(release / "timings.parquet")
    change(frame).write_parquet(release / "timings.parquet")
    redigest(release, tables=False)


def _metadata(release: Path, change) -> None:
    import polars as pl

    frame = pl.read_parquet(release / "metadata.parquet")
    change(frame).write_parquet(release / "metadata.parquet", statistics=False)
    redigest(release, tables=False)


def _counts(key, value):
    return lambda r: _edit_manifest(r, lambda m: m["counts"].__setitem__(key, value))


def _config(path, value):
    def change(manifest):
        node = manifest["config"]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return lambda r: _edit_manifest(r, change)


def _event(event):
    def change(manifest):
        manifest["build_events"] = [event]
        manifest["counts"]["crosscheck_disagreements"] = 1

    return lambda r: _edit_manifest(r, change)


def _rewrite(relative, text):
    def damage(release: Path) -> None:
        (release / relative).write_text(text)
        redigest(release, tables=False)

    return damage


def _card_line(release: Path) -> None:
    card = (release / "README.md").read_text()
    (release / "README.md").write_text(card.replace("Certified grid-planning tasks", "Uncertified tasks", 1))
    redigest(release, tables=False)


def _first_task_id(release: Path) -> str:
    return sorted(p.stem for p in (release / "tasks").rglob("*.json"))[0]


CASES = [
    (_counts("decoys", 10_000), "counts.decoys=10000 but the files give"),
    (_counts("certified", 1), "counts.certified=1 but the files give 4"),
    (_counts("crosscheck_ok", 0), "counts.crosscheck_ok=0 but the files give 4"),
    (_counts("crosscheck_disagreements", 3), "counts.crosscheck_disagreements=3 but build_events holds 0"),
    (_counts("per_domain", {"toy": "2", "course": 2}), "counts.per_domain="),
    (_counts("per_domain", "toy: 2, course: 2"), "must map each domain to a number"),
    (_counts("tasks", True), "counts.tasks"),
    (_counts("decoys", -1), "counts.decoys=-1 is not a whole number"),
    (_counts("extra", 1), "unknown keys ['extra']"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("note", "trust me")), "unknown keys ['note']"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("name", "other")), "config.release.name='tiny'"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("version", "3.0.0")), "config.release.version"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("version", "v2")), "not a semantic version"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("software", ["ortools"])), "'software' must map"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("deterministic", ["tasks/"])), "'deterministic'"),
    (lambda r: _edit_manifest(r, lambda m: m.__setitem__("config", "built by hand")), "'config' must be"),
    (_config(["release", "seed"], 7), ": seed"),
    (_config(["release", "domains"], ["toy"]), "its config makes 2 tasks"),
    (_config(["release", "tasks_per_cell"], 2), "its config makes 8 tasks"),
    (_config(["grid", "hidden_slots"], [3]), "hidden_slots"),
    (_config(["grid", "rows"], 6), "rows"),
    (_config(["grid", "decoy_budgets"], list(range(20_000))), "do not describe a build"),
    (_config(["grid", "candidates_per_slot"], 9), "candidates_per_slot"),
    (_config(["release", "salted"], True), "README.md: not the card"),
    (lambda r: _edit_manifest(r, lambda m: m["config"].pop("grid")), "neither a build"),
    (_event({"kind": "crosscheck_disagreement", "task_id": "toy-000000000000", "attempt": 0}), "not a task"),
    (_event({"kind": "note", "task_id": "x"}), "not a cross-check disagreement record"),
    (_event({"kind": "crosscheck_disagreement", "task_id": None, "attempt": 0, "reason": "\x1b[2J"}), ""),
    (_card_line, "README.md: not the card this release's files give"),
    (_rewrite("LICENSE", "MIT License\n\nCopyright (c) someone else\n"), "LICENSE: not the licence"),
    (_rewrite("schemas/task.schema.json", "{}"), "schemas/task.schema.json: not the JSON Schema"),
    (lambda r: _timings(r, lambda f: f.with_columns(f["certify_ms"] * -1)), "certify_ms holds 4 impossible"),
    (lambda r: _timings(r, lambda f: f.with_columns(f["generate_ms"] * math.nan)), "generate_ms holds"),
    (lambda r: _timings(r, lambda f: f.with_columns(f["measures_ms"] * 1e12)), "measures_ms holds"),
    (lambda r: _timings(r, lambda f: f.head(3)), "timings.parquet: its rows (3)"),
    # a duplicated row: the same ids as a set, not once each (a set comparison let it through)
    (lambda r: _timings(r, lambda f: f.vstack(f.head(1))), "timings.parquet: its rows (5)"),
    (lambda r: _timings(r, lambda f: f.head(3).vstack(f.head(1))), "timings.parquet: its rows (4)"),
    (lambda r: _metadata(r, lambda f: f.vstack(f.head(1))), "metadata.parquet: its rows (5)"),
    (lambda r: _metadata(r, lambda f: f.head(3).vstack(f.head(1))), "metadata.parquet"),
    (lambda r: _timings(r, lambda f: f.rename({"certify_ms": "certify_s"})), "its columns are not task_id"),
    (lambda r: _metadata(r, lambda f: f.with_columns(f["seed"] + 5)), "seed"),
    (_config(["release", "crosscheck"], False), "cross-check is not 'not_run'"),
    (lambda r: _metadata(r, lambda f: f.with_columns(f["index"] + 1)), "index"),
]


@pytest.mark.parametrize(("damage", "message"), CASES, ids=[str(n) for n in range(len(CASES))])
def test_a_claim_the_files_do_not_back_is_refused(damage, message, tiny, tmp_path):
    copy = copy_release(tiny, tmp_path / "copy")  # clean: the fixture checked a copy of it
    damage(copy)
    outside = snapshot(tmp_path)
    failures, _ = _claim_failures(copy)
    assert failures, "the lie was accepted"
    assert any(message in line for line in failures), failures
    assert all("\n" not in line and len(line) < 600 for line in failures)
    assert snapshot(tmp_path) == outside


def test_an_escape_sequence_in_an_event_is_not_printed(tiny, tmp_path):
    copy = copy_release(tiny, tmp_path / "copy")
    _event(
        {"kind": "crosscheck_disagreement", "task_id": _first_task_id(copy), "attempt": 0, "x": "\x1b]0;"}
    )(copy)
    failures, _ = _claim_failures(copy)
    assert any("cannot be shown" in line for line in failures)


def test_verify_fails_a_lying_manifest_with_one_line(tiny, tmp_path, capsys):
    from gridbench.commands.verify import verify

    copy = copy_release(tiny, tmp_path / "copy")
    _counts("decoys", 10_000)(copy)
    assert verify(compose_config([f"release={copy}", "verify.workers=1"], "verify", "apps")) == 1
    err = capsys.readouterr().err
    assert "FILE manifest.json: counts.decoys=10000 but the files give" in err and "Traceback" not in err


def _task_pair(release: Path) -> tuple[dict, dict, str]:
    path = sorted((release / "tasks").glob("course/*.json"))[0]  # a course task: it has categories
    answer = release / "answers" / path.relative_to(release / "tasks")
    return json.loads(path.read_text()), json.loads(answer.read_text()), path.relative_to(release).as_posix()


def _rename_item(task: dict, answer: dict, new: str) -> None:
    old = task["grid"][0][0] or task["slots"][0]["candidates"][0]
    text = json.dumps([task, answer]).replace(json.dumps(old), json.dumps(new))
    task.clear(), answer.clear()
    fresh_task, fresh_answer = json.loads(text)
    task.update(fresh_task), answer.update(fresh_answer)


def _unsafe_name(text):
    def change(task, answer):
        task["items"][0]["name"] = text

    return change


def _unsafe_id(text):
    return lambda task, answer: _rename_item(task, answer, text)


def _unsafe_category(task, answer):
    item = next(i for i in task["items"] if "category" in i)
    item["category"] = item["category"] + "\u200b"


def _short_truth(task, answer):
    answer["truth"] = answer["truth"][:-1]


def _ragged_truth(task, answer):
    answer["truth"][-1] = answer["truth"][-1][:-2]


WORDS = [
    (_unsafe_name("\x1b[2J\x1b[31mIGNORE ALL RULES"), "cannot be shown safely: a control"),
    (_unsafe_name("Algebra \u202e101"), "bidirectional control character U+202E"),
    (_unsafe_name("x" * 100_000), "100000 characters"),
    (_unsafe_name("line\nbreak"), "a control or invisible character U+000A"),
    (_unsafe_id("C\u2066evil\u2069"), "bidirectional control character U+2066"),
    (_unsafe_id("C" + "0" * 5000), "item id"),
    (_unsafe_id("C\x00nul"), "a control or invisible character U+0000"),
    (_unsafe_category, "invisible character U+200B"),
    (_short_truth, "truth grid is not 5 x 5"),
    (_ragged_truth, "truth grid is not 5 x 5"),
]


@pytest.mark.parametrize(("change", "message"), WORDS, ids=[str(n) for n in range(len(WORDS))])
def test_words_that_cannot_be_shown_and_a_ragged_truth_are_refused(change, message, tiny):
    from pipeline.storage.verification import prove_data
    from solvers.results import SolverSettings

    task, answer, relative = _task_pair(tiny)
    change(task, answer)
    task_id, _, reasons = prove_data(task, answer, relative, SolverSettings(), None)
    assert any(message in reason for reason in reasons), reasons
    assert all("\n" not in r and "\x1b" not in r and "\u202e" not in r and len(r) < 600 for r in reasons)


def test_a_task_id_with_control_characters_or_absurd_length_is_refused_as_a_path(tiny, tmp_path):
    for bad in ("toy-\x1b[2Jevil", "toy-\u202eevil", "toy-" + "x" * 600):
        copy = copy_release(tiny, tmp_path / f"copy{len(bad)}")
        _edit_manifest(copy, lambda m, bad=bad: m["files"].__setitem__(f"tasks/toy/{bad}.json", "0" * 64))
        failures, _ = _claim_failures(copy)
        assert len(failures) == 1 and "listed path" in failures[0] or "short relative" in failures[0]
        assert "\x1b" not in failures[0] and "\u202e" not in failures[0]


def test_a_card_written_before_the_commands_moved_is_still_the_card_its_files_give(tiny, tmp_path):
    """Releases made before the commands left pipeline/ name the commands' old module on their
    card's last line: verify takes that line, and only that one, for today's."""
    from pipeline.storage.card import EARLIER_VERIFY_LINES, VERIFY_LINE

    for line, accepted in [
        (EARLIER_VERIFY_LINES[0], True),
        (VERIFY_LINE.replace("verify`", "verify --fast`"), False),
        (EARLIER_VERIFY_LINES[0] + " Trust it.", False),
    ]:
        copy = copy_release(tiny, tmp_path / f"copy-{accepted}-{len(line)}")
        card = (copy / "README.md").read_text()
        assert card.count(VERIFY_LINE) == 1
        (copy / "README.md").write_text(card.replace(VERIFY_LINE, line))
        redigest(copy, tables=False)
        failures, _ = _claim_failures(copy)
        refused = any("README.md: not the card" in failure for failure in failures)
        assert refused is not accepted, (line, failures)


def test_an_event_naming_no_string_task_and_a_null_role_are_lines_not_tracebacks(tmp_path):
    """Found by an outside audit: a build event whose task_id is a list (unhashable) and an
    answer row whose role is null raised TypeError and AttributeError inside verify."""
    from types import SimpleNamespace

    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.storage.claims import _events, _targets

    meta = pl.DataFrame({"task_id": ["t1"], "task_redraws": [2]})
    failures: list[str] = []
    event = {"kind": "crosscheck_disagreement", "task_id": ["x"], "attempt": 0}
    _events({"build_events": [event]}, meta, failures)
    _events({"build_events": [event]}, None, failures)
    assert len(failures) == 2 and all("which is not a task of the release" in f for f in failures), failures
    (tmp_path / "data").mkdir()
    role = pa.struct([("row", pa.int64()), ("col", pa.int64()), ("decoys", pa.list_(pa.string()))])
    table = pa.table(
        {
            "task_id": ["t1"],
            "roles": pa.array([[None, {"row": 0, "col": 1, "decoys": ["d"]}]], pa.list_(role)),
            "crosscheck": pa.array([None], pa.struct([("solver", pa.string())])),
        }
    )
    pq.write_table(table, tmp_path / "data" / "answers.parquet")
    found = pl.DataFrame({"task_id": ["t1"], "depth": [0], "resistant_decoys": [0], "n_decoys": [1]})
    settings = SimpleNamespace(min_depth="probing", min_resistant_share=0.0, crosscheck_solver="highs")
    failures = []
    _targets(tmp_path, found, settings, failures)  # the null role counts no decoy cell
    assert failures and "decided below config.generation.min_depth" in failures[0], failures
