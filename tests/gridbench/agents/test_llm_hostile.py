"""The runner against servers that misbehave badly: a reply dripped one byte at a time, a 200
whose body is not JSON, token counts that are not integers, arguments nested 100,000 deep, a
32 MB body, an episode past its deadline, a server that answers slowly. Every one ends as an
``api_error`` episode or a counted malformed call within its deadline: never a traceback.
And a resume reads past corrupt rows of ``episodes.jsonl``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from gridbench.agents.llm.loopback import LoopbackServer, Script, ScriptedPolicy
from gridbench.commands.evaluate import evaluate
from tests.helpers_release import compose_config

TWO_TASKS = ("hidden_slots=[4]", "decoy_budgets=[3]")  # one toy task, one course task


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def toy(release: Path) -> str:
    """The toy task of the two: the one the faults hit (the course task keeps the run going,
    so that the first batch is not all api errors)."""
    import gridbench

    return (
        gridbench.load_release(release)
        .filter(domains=["toy"], hidden_slots=[4], decoy_budgets=[3])[0]
        .task_id
    )


@pytest.fixture()
def server(release, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-any")
    started = LoopbackServer(ScriptedPolicy(release), Script())
    url = started.start()
    yield started, url
    started.stop()


def run(
    release: Path, url: str, out: Path, *extra: str, code: int = 3, timeout: float = 1.5
) -> tuple[pl.DataFrame, list[dict]]:
    cfg = compose_config(
        [
            f"release={release}",
            "agent=llm",
            "agent.model=scripted",
            f"agent.base_url={url}",
            f"output_root={out}",
            f"agent.timeout={timeout}",
            "agent.max_retries=0",
            "failure_rates=[0.0,0.1]",
            *TWO_TASKS,
            *extra,
        ],
        "evaluate",
        "apps",
    )
    assert evaluate(cfg) == code
    folder = next((out / release.name).iterdir())
    errors = folder / "api_errors.jsonl"
    failed = [json.loads(line) for line in errors.read_text().splitlines()] if errors.exists() else []
    return pl.read_parquet(folder / "results.parquet"), failed


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("drip", "request timeout of 1.5 s passed"),
        ("not_json", "reply is not JSON"),
        ("huge", "larger than"),
        ("gzip_bomb", "larger than 1048576 bytes once decompressed"),
    ],
)
def test_a_reply_that_cannot_be_used_is_an_api_error_in_bounded_time(kind, needle, release, server, tmp_path):
    loopback, url = server
    loopback.script = Script(at={(toy(release), 2): kind}, drip_s=0.2)
    start = time.monotonic()
    # the drip is cut by the 1.5 s request timeout; the other replies must be refused for what
    # they are, so a loaded machine's slow read of a large reply is given time (10 s)
    timeout = 1.5 if kind == "drip" else 10.0
    frame, failed = run(release, url, tmp_path, "agent.max_reply_bytes=1048576", timeout=timeout)
    assert time.monotonic() - start < 30
    assert frame.height == 2 and frame["success"].all() and len(failed) == 2
    assert all(row["end_reason"] == "api_error" and needle in row["api_error"] for row in failed), failed


@pytest.mark.slow  # a drip is an api_error in bounded time: quick above; retries: test_llm_counts
def test_a_dripping_server_is_retried_and_each_retry_counted(release, server, tmp_path):
    loopback, url = server
    loopback.script = Script(at={(toy(release), 2): "drip"}, drip_s=0.2)
    _, failed = run(release, url, tmp_path, "agent.max_retries=1", "agent.timeout=0.8", "failure_rates=[0.0]")
    (row,) = failed
    assert row["api_retries"] == 1 and row["turns"] == 2


def test_bad_usage_and_deep_arguments_are_counted_and_the_task_still_solved(release, server, tmp_path):
    loopback, url = server
    loopback.script = Script(
        at={("*", 1): "bad_usage", ("*", 2): "deep_args", ("*", 3): "gzipped", ("*", 4): "surrogate"}
    )
    frame, failed = run(release, url, tmp_path, code=0)
    from gridbench.commands.show import main as show_main

    folder = next((tmp_path / release.name).iterdir())
    assert show_main([f"run={folder}", f"task={toy(release)}", "failure_rate=0.1"]) == 0  # readable back
    assert not failed and frame.height == 4 and frame["success"].all()
    assert (frame["usage_errors"] == 1).all() and (frame["malformed_tool_calls"] == 1).all()
    assert (frame["prompt_tokens"] > 0).all()  # the other replies' usage is still counted


def test_an_episode_past_its_deadline_ends_in_api_error(release, server, tmp_path):
    loopback, url = server
    loopback.script = Script(at={(toy(release), t): "slow" for t in range(60)}, slow_s=0.4)
    start = time.monotonic()
    _, failed = run(
        release, url, tmp_path, "agent.episode_timeout=1.0", "agent.timeout=5", "failure_rates=[0.0]"
    )
    assert time.monotonic() - start < 15
    (row,) = failed
    assert "deadline of 1 s" in row["api_error"] and 1 <= row["turns"] <= 3


def test_a_heartbeat_line_comes_while_an_episode_is_in_flight(release, server, tmp_path, monkeypatch, capsys):
    import pipeline.parallel

    monkeypatch.setattr(pipeline.parallel, "LOG_EVERY_S", 0.3)
    loopback, url = server
    loopback.script = Script(at={("*", 1): "slow"}, slow_s=1.5)
    run(release, url, tmp_path, "failure_rates=[0.0]", "agent.timeout=10", code=0)
    out = capsys.readouterr().out.splitlines()
    # lines while the episodes are in flight, though none ends for 1.5 s
    beats = [line for line in out if line.startswith("eval llm-scripted: 0/2")]
    assert len(beats) >= 2 and all(" in flight" in b and "last reply" in b for b in beats), out
    # both episodes in flight at once (under load the first may end before the last line)
    assert any("2 in flight" in beat for beat in beats), beats


def test_a_resume_skips_and_names_corrupt_rows_and_keeps_the_good_ones(release, server, tmp_path, capsys):
    _, url = server
    frame, _ = run(release, url, tmp_path, "failure_rates=[0.0,0.1,0.3]", "domains=[toy]", code=0)
    assert frame.height == 3
    folder = next((tmp_path / release.name).iterdir())
    lines = (folder / "episodes.jsonl").read_bytes().splitlines()
    good, bad_types, bad_id = (json.loads(line) for line in lines)
    broken = [
        json.dumps(good).encode(),
        json.dumps({**bad_types, "success": "yes", "steps": "many"}).encode(),
        json.dumps({**bad_id, "episode_id": ["not", "hashable"]}).encode(),
        b'{"episode_id": "\xff\xfe invalid utf-8"}',
        b"[1, 2, 3]",
        b"{" * 100_000,
    ]
    (folder / "episodes.jsonl").write_bytes(b"\n".join(broken) + b"\n")
    capsys.readouterr()
    again, _ = run(release, url, tmp_path, "failure_rates=[0.0,0.1,0.3]", "domains=[toy]", code=0)
    err = capsys.readouterr().err
    assert "line 2: success is str" in err and "line 3: episode_id" in err and "line 4: not UTF-8" in err
    assert "line 6: not JSON" in err and "Traceback" not in err
    assert again.height == 3 and again["success"].all()
    assert good["episode_id"] in set(again["episode_id"])  # the good row kept, not replayed
    assert len(set(again["episode_id"])) == 3
