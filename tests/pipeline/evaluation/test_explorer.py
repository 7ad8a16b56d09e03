"""The results explorer, without a browser: the folder it writes (self-contained, escaped,
deterministic, replaced atomically), on an empty run, a partial run and two runs of one
model; bad input is one line. The browser test is tests/pipeline/evaluation/test_explorer_browser.py."""

from __future__ import annotations

import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from gridbench_core.errors import UserError
from pipeline.evaluation.explorer import ASSETS, MARKER, build_view, script_json
from pipeline.evaluation.runs import RunStore
from tests.helpers_release import compose_config

HOSTILE = '</script><script>alert("x")</script><img src=x onerror=alert(1)>&\u2028'


@pytest.fixture(scope="module")
def runs(small_release, tmp_path_factory):
    """Runs of the small release: search, greedy_local twice (two runs of one model), an
    empty run, a partial one (an episode in api_error), and a hostile model name."""
    from gridbench.commands.evaluate import evaluate

    root = tmp_path_factory.mktemp("explorer") / "runs"
    for agent, extra in (
        ("search", ["domains=[toy]"]),
        ("greedy_local", ["domains=[toy]"]),
        ("greedy_local", ["domains=[toy]", "run_name=again"]),
    ):
        overrides = [f"release={small_release}", f"agent={agent}", f"output_root={root}", "workers=1", *extra]
        assert evaluate(compose_config(overrides, "evaluate", "apps")) == 0
    runs = root / small_release.name
    RunStore(runs / "empty").write_results()
    episodes = (runs / "again" / "episodes.jsonl").read_text().splitlines()
    hostile = [json.loads(line) for line in episodes]
    hostile[0]["model"] = HOSTILE
    failed = dict(hostile[1], end_reason="api_error", api_error=HOSTILE, episode_id="f" * 16)
    (runs / "again" / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in hostile) + "\n")
    (runs / "again" / "api_errors.jsonl").write_text(json.dumps(failed) + "\n")
    RunStore(runs / "again").write_results()
    return runs


def summary_of(view: Path) -> dict:
    text = (view / "data" / "summary.js").read_text()
    assert text.startswith("window.GB_SUMMARY = ") and text.endswith(";\n")
    return json.loads(text[len("window.GB_SUMMARY = ") : -2])


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.inline_scripts = 0
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        self.ids.add(values.get("id") or "")
        for name in ("src", "href"):
            if values.get(name):
                self.sources.append(values[name])
        self.inline_scripts += tag == "script" and "src" not in values


def test_the_folder_is_self_contained_escaped_and_complete(runs, small_release, tmp_path):
    view = tmp_path / "view"
    stats = build_view([runs], view, {runs.name: small_release})
    page = Page()
    page.feed((view / "index.html").read_text())
    assert page.sources == ["data/summary.js"]  # nothing else: no CDN, no network
    assert page.inline_scripts == 1 and {"episodes", "filters", "success", "diagnostics"} <= page.ids
    summary = summary_of(view)
    assert stats.episodes == len(summary["rows"]) == 4 + 4 + 4
    assert {m["run"] for m in summary["heatmaps"]} == {"search", "greedy_local", "again"}
    search = next(m for m in summary["heatmaps"] if m["run"] == "search")
    assert search["n"] == 4 and all(c["low"] <= c["rate"] <= c["high"] for c in search["cells"].values())
    # one row per task, each run's success side by side (null where a run did not play it)
    tasks = {row["task_id"]: row for row in summary["task_rows"]}
    assert len(tasks) == len({r["task_id"] for r in summary["rows"]}) == 4
    assert [c[0] for c in summary["task_columns"][-3:]] == ["run:again", "run:greedy_local", "run:search"]
    for row in tasks.values():
        assert row["run:search"] == 1.0 and row["solved_by"] >= 1 and row["depth_rung"]
    notes = " ".join(summary["notes"])
    assert "Runs without a scored episode: empty" in notes and "again" in notes  # empty, partial
    # two runs of one model: the same episodes, kept apart (one file each)
    again = {r["task_id"] for r in summary["rows"] if r["run"] == "again"}
    assert again and again <= {r["task_id"] for r in summary["rows"] if r["run"] == "greedy_local"}
    assert len({r["key"] for r in summary["rows"]}) == len(summary["rows"])
    for row in summary["rows"]:
        assert row["has_transcript"] and (view / "data" / "episode" / f"{row['key']}.js").is_file()
        assert (view / "data" / "task" / f"{row['task']}.js").is_file()
    # outside text is escaped in every data file: no markup can close the script it is in
    for path in (view / "data").rglob("*.js"):
        assert "<" not in path.read_text() and "\u2028" not in path.read_text(), path
    assert any(r["model"] == HOSTILE for r in summary["rows"])
    # the page writes values as text only
    script = (ASSETS / "explorer.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink


def test_an_episode_file_is_the_runs_own_transcript_and_the_truth_comes_apart(runs, small_release, tmp_path):
    view = tmp_path / "view"
    build_view([runs], view, {runs.name: small_release})
    row = next(r for r in summary_of(view)["rows"] if r["run"] == "search")
    text = (view / "data" / "episode" / f"{row['key']}.js").read_text()
    data = re.fullmatch(r'GB_LOAD\("episode", "([0-9a-f]{16})", "([A-Za-z0-9+/=]+)"\);\n', text)
    assert data and data.group(1) == row["key"]
    import base64

    packed = (runs / "search" / "transcripts" / f"{row['episode_id']}.json.gz").read_bytes()
    assert base64.b64decode(data.group(2)) == packed
    task = (view / "data" / "task" / f"{row['task']}.js").read_text()
    truth = (view / "data" / "truth" / f"{row['task']}.js").read_text()
    answer = json.loads((small_release / "answers" / row["domain"] / f"{row['task_id']}.json").read_text())
    assert json.dumps(answer["truth"][0][0]) in truth and '"truth"' not in task


def test_the_same_runs_give_the_same_bytes_and_a_rebuild_replaces_the_folder(runs, small_release, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    build_view([runs], first, {runs.name: small_release})
    build_view([runs], second, {runs.name: small_release})

    def files(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert files(first) == files(second)
    (first / "stale.js").write_text("old")
    build_view([runs], first, {runs.name: small_release})
    assert not (first / "stale.js").exists() and files(first) == files(second)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_failed_build_leaves_the_old_folder_and_no_temporary(runs, small_release, tmp_path, monkeypatch):
    from pipeline.evaluation import explorer

    view = tmp_path / "view"
    build_view([runs], view, {runs.name: small_release})
    before = (view / "data" / "summary.js").read_bytes()

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(explorer, "_write_transcript", broken)
    with pytest.raises(OSError):
        build_view([runs], view, {runs.name: small_release})
    assert (view / "data" / "summary.js").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["view"]


def test_bad_input_is_one_line(runs, small_release, tmp_path):
    from gridbench.commands.view import view as command

    def run(**options):
        overrides = [f"{k}={v}" for k, v in options.items()]
        return command(compose_config(overrides, "view", "apps"))

    with pytest.raises(UserError, match="is not a folder"):
        run(runs_root=tmp_path / "missing", output=tmp_path / "out")
    broken = tmp_path / "broken" / "run"
    broken.mkdir(parents=True)
    (broken / "results.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(UserError, match="cannot be read"):
        run(runs_root=tmp_path / "broken", output=tmp_path / "out")
    for column, value in (("failure_rate", None), ("hidden_slots", "five")):
        damaged = tmp_path / f"damaged-{column}" / "run"
        damaged.mkdir(parents=True)
        table = pl.read_parquet(runs / "search" / "results.parquet")
        table.with_columns(pl.lit(value).alias(column)).write_parquet(damaged / "results.parquet")
        # refused by the report's check of any results table (the column named), or the view's
        with pytest.raises(
            UserError,
            match=rf"column '{column}' (has \d+ empty values|is String)|have {column} missing or not",
        ):
            run(runs_root=damaged.parent, output=tmp_path / "out")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="not a folder gridbench view wrote"):
        run(runs_root=runs, output=mine, release=small_release)
    assert (mine / "notes.txt").read_text() == "keep me"
    assert not (tmp_path / "out").exists()
    # without the release the runs still show, with a note instead of grids
    assert run(runs_root=runs, output=tmp_path / "out", release=tmp_path / "nowhere") == 0
    summary = summary_of(tmp_path / "out")
    assert "was not found" in " ".join(summary["notes"]) and all(r["task"] is None for r in summary["rows"])
    assert (tmp_path / "out" / MARKER).is_file()


def test_a_transcript_that_expands_too_far_is_named_not_embedded(runs, small_release, tmp_path):
    import shutil

    copy = tmp_path / "runs" / runs.name
    shutil.copytree(runs, copy)
    row = pl.read_parquet(copy / "search" / "results.parquet").row(0, named=True)
    path = copy / "search" / "transcripts" / f"{row['episode_id']}.json.gz"
    path.write_bytes(gzip.compress(b" " * (33 * 1024 * 1024), mtime=0))  # 33 MiB of spaces
    view = tmp_path / "view"
    stats = build_view([copy], view, {runs.name: small_release})
    shown = next(r for r in summary_of(view)["rows"] if r["episode_id"] == row["episode_id"])
    assert not shown["has_transcript"] and "more than" in shown["transcript_note"]
    assert stats.transcripts == stats.episodes - 1


def test_script_json_cannot_close_a_script():
    assert script_json({"a": "</script><!--\u2028"}) == '{"a":"\\u003c/script\\u003e\\u003c!--\\u2028"}'


def test_make_show_says_how_the_episode_went(runs):
    from pipeline.evaluation.transcripts import show

    row = pl.read_parquet(runs / "search" / "results.parquet").row(0, named=True)
    text = show(runs / "search", row["task_id"])
    assert f"calls {row['steps']} vs the ideal {row['ideal_calls']}" in text
    assert f"violations introduced {row['violations_introduced']}, repaired" in text
