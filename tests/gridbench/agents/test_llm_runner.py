"""The LLM runner over real HTTP with the real ``openai`` client, against a loopback server
that plays a scripted policy and misbehaves on purpose, one failure mode at a time and mixed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from gridbench.agents.llm.loopback import RECOVERABLE, LoopbackServer, Script, ScriptedPolicy
from gridbench.commands.evaluate import evaluate
from pipeline.evaluation.runs import RunStore, read_transcript
from tests import ROOT
from tests.helpers_release import compose_config

KEY = "sk-loopback-0123456789-SECRET"


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


@pytest.fixture()
def server(release):
    started = LoopbackServer(ScriptedPolicy(release), Script(), api_key=KEY)
    url = started.start()
    yield started, url
    started.stop()


def run(release: Path, url: str, out: Path, *extra: str, monkeypatch=None, code: int = 0) -> pl.DataFrame:
    if monkeypatch is not None:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cfg = compose_config(
        [
            f"release={release}",
            "agent=llm",
            "agent.model=scripted",
            f"agent.base_url={url}",
            f"output_root={out}",
            "agent.timeout=1.0",
            "agent.max_retries=2",
            "agent.max_steps=60",
            *extra,
        ],
        "evaluate",
        "apps",
    )
    assert evaluate(cfg) == code
    results = sorted((out / release.name).glob("*/results*.parquet"))
    return pl.concat([pl.read_parquet(p) for p in results], how="diagonal_relaxed")


COUNTER = {
    "http_429": "api_retries",
    "http_500": "api_retries",
    "timeout": "api_retries",
    "text_hermes": "text_tool_calls",
    "text_json": "text_tool_calls",
    "malformed": "malformed_tool_calls",
    "unknown_tool": "malformed_tool_calls",
    "length": "length_cuts",
    "empty": "reminders",
    "no_tool": "reminders",
    "reasoning": "reasoning_tokens",
    "multi": None,
    "no_id": None,
}


@pytest.mark.parametrize("kind", RECOVERABLE)
def test_each_recoverable_fault_is_handled_counted_and_the_task_still_solved(
    kind, release, server, tmp_path, monkeypatch
):
    loopback, url = server
    loopback.script = Script(at={("*", 2): kind}, timeout_s=2.0)
    # a time-out fault is cut at 0.6 s (the loopback answers the others in milliseconds)
    timeout = ["agent.timeout=0.6"] if kind == "timeout" else []
    frame = run(release, url, tmp_path, "failure_rates=[0.0]", *timeout, monkeypatch=monkeypatch)
    assert frame.height == 8 and frame["success"].all(), frame.select("task_id", "end_reason")
    assert set(frame["end_reason"]) == {"done"}
    column = COUNTER[kind]
    if column:
        assert (frame[column] >= 1).all(), (kind, frame[column].to_list())
    if kind == "timeout":  # the abandoned request of every task was retried, and counted
        retries = frame["api_retries"].sum()
        assert retries >= 8 and loopback.requests == frame["turns"].sum() + retries
    if kind == "multi":
        assert (frame["turns"] < frame["steps"]).any()  # several calls in one reply
    if kind == "reasoning":
        transcript = read_transcript(next((tmp_path / release.name).glob("*/transcripts/*.gz")))
        assert any("reasoning_content" in m for m in transcript["transcript"])


@pytest.mark.parametrize(("kind", "end"), [("context", "context_length"), ("silent", "no_tool_call")])
def test_a_fatal_model_behaviour_ends_the_episode_with_its_reason(
    kind, end, release, server, tmp_path, monkeypatch
):
    loopback, url = server
    loopback.script = Script(at={("*", t): kind for t in range(1, 60)})
    frame = run(release, url, tmp_path, monkeypatch=monkeypatch)
    assert set(frame["end_reason"]) == {end} and not frame["success"].any()


def test_an_api_that_keeps_failing_stops_the_run_and_is_retried_on_resume(
    release, server, tmp_path, monkeypatch
):
    from gridbench.agents.harness import RunStopped

    loopback, url = server
    loopback.script = Script(at={("*", 1): "http_500_always"})
    with pytest.raises(RunStopped, match="all 8 episodes of the first batch ended in api_error"):
        run(release, url, tmp_path, "agent.max_retries=1", monkeypatch=monkeypatch)  # one back-off
    folder = next((tmp_path / release.name).iterdir())
    errors = (folder / "api_errors.jsonl").read_text().splitlines()
    assert len(errors) == 8 and all(json.loads(e)["end_reason"] == "api_error" for e in errors)
    assert all("500" in json.loads(e)["api_error"] for e in errors)
    empty = pl.read_parquet(folder / "results.parquet")  # written, with every column, no row
    assert empty.height == 0 and {"success", "episode_id", "api_retries", "turns"} <= set(empty.columns)
    store = RunStore(folder)
    assert len(store.unanswered()) == 8
    loopback.script = Script()
    second = run(release, url, tmp_path, monkeypatch=monkeypatch)
    assert second.height == 8 and second["success"].all()
    assert store.unanswered() == set()  # answered since: no longer reported as api errors


def test_a_run_with_some_api_errors_exits_3_and_says_how_many(release, server, tmp_path, monkeypatch, capsys):
    loopback, url = server
    first = sorted(loopback.policy.plans)[0]
    loopback.script = Script(at={(first, 1): "http_500_always"})
    frame = run(
        release,
        url,
        tmp_path,
        "failure_rates=[0.0,0.1]",
        "agent.max_retries=1",
        monkeypatch=monkeypatch,
        code=3,
    )
    assert frame.height == 14 and frame["success"].all()
    err = capsys.readouterr().err
    assert "error: 2 of 16 episodes ended in api_error" in err and "make show" in err
    from gridbench.commands.show import main as show_main

    folder = next((tmp_path / release.name).iterdir())
    assert show_main([f"run={folder}", f"task={first}", "failure_rate=0.1"]) == 0
    shown = capsys.readouterr().out
    assert "end api_error" in shown and "api error (not scored" in shown and "500" in shown
    assert "[assistant]" in shown or "[call " in shown  # the transcript up to the failure
    loopback.script = Script()  # the rerun finishes it: show prints the finished episode now
    run(release, url, tmp_path, "failure_rates=[0.0,0.1]", monkeypatch=monkeypatch)
    assert show_main([f"run={folder}", f"task={first}", "failure_rate=0.1"]) == 0
    shown = capsys.readouterr().out
    assert "end done" in shown and "api error" not in shown


def test_a_refused_key_stops_the_run_at_once_with_one_line(release, server, tmp_path, monkeypatch):
    from gridbench.agents.harness import RunStopped

    loopback, url = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    cfg = compose_config(
        [
            f"release={release}",
            "agent=llm",
            "agent.model=m",
            f"agent.base_url={url}",
            f"output_root={tmp_path}",
        ],
        "evaluate",
        "apps",
    )
    start = time.monotonic()
    with pytest.raises(RunStopped, match="refused the API key .*401.*OPENAI_API_KEY") as caught:
        evaluate(cfg)
    assert time.monotonic() - start < 20 and "\n" not in str(caught.value)
    assert loopback.requests <= 8  # no retry of a 401
    folder = next((tmp_path / release.name).iterdir())
    assert pl.read_parquet(folder / "results.parquet").height == 0


@pytest.mark.slow  # each fault is also checked alone, quick
def test_mixed_faults_with_tool_failures_still_solve_every_episode(release, server, tmp_path, monkeypatch):
    loopback, url = server
    loopback.script = Script(rate=0.5, seed=3, timeout_s=2.0)
    frame = run(
        release,
        url,
        tmp_path,
        "failure_rates=[0.0,0.3]",
        "trials=2",
        "agent.seed=7",
        "agent.extra_body={chat_template_kwargs: {enable_thinking: false}}",
        monkeypatch=monkeypatch,
    )
    assert {"chat_template_kwargs", "seed", "tools", "tool_choice"} <= loopback.fields_seen
    assert frame.height == 32 and frame["success"].all()
    for column in ("api_retries", "text_tool_calls", "malformed_tool_calls", "reminders"):
        assert frame[column].sum() > 0, column
    assert frame.filter(pl.col("failure_rate") > 0)["failed_calls"].sum() > 0
    assert frame["prompt_tokens"].min() > 0 and frame["prompt_sha256"].n_unique() == 1
    assert (frame["latency_ms_median"] > 0).all()


def test_shards_together_equal_one_run(release, server, tmp_path, monkeypatch):
    _, url = server
    whole = run(release, url, tmp_path / "whole", "failure_rates=[0.0,0.1]", monkeypatch=monkeypatch)
    for index in (0, 1):
        run(
            release,
            url,
            tmp_path / "parts",
            f"shard={index}/2",
            "failure_rates=[0.0,0.1]",
            monkeypatch=monkeypatch,
        )
    folder = next((tmp_path / "parts" / release.name).iterdir())
    parts = [pl.read_parquet(folder / f"results.shard-{i}-of-2.parquet") for i in (0, 1)]
    assert parts[0].height + parts[1].height == whole.height == 16 and min(p.height for p in parts)
    merged = pl.concat(parts).sort("episode_id")
    columns = ["episode_id", "task_id", "failure_rate", "success", "steps", "failed_calls"]
    assert merged.select(columns).equals(whole.sort("episode_id").select(columns))


def _rows(folder: Path) -> list[dict]:
    path = next(folder.glob("*/episodes.jsonl"), None)
    return [json.loads(line) for line in path.read_text().splitlines()] if path else []


@pytest.mark.slow  # a subprocess killed mid-run; resume is also checked quick (api errors retried on resume)
def test_a_killed_run_resumes_without_losing_or_duplicating_episodes(release, server, tmp_path):
    loopback, url = server
    loopback.script = Script(at={("*", t): "timeout" for t in range(2, 4)}, timeout_s=0.2)
    command = [
        sys.executable,
        "-m",
        "gridbench.commands.evaluate",
        f"release={release}",
        "agent=llm",
        "agent.model=scripted",
        f"agent.base_url={url}",
        f"output_root={tmp_path}",
        "agent.timeout=5",
        "agent.concurrency=2",
        "failure_rates=[0.0,0.1]",
        f"hydra.run.dir={tmp_path}/hydra",
    ]
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 60
    while len(_rows(tmp_path / release.name)) < 4 and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err, (out, err)
    assert "interrupted" not in out, out  # its line on stderr, as every command's
    assert any(line.startswith("interrupted (Ctrl-C); ") for line in err.splitlines()), err
    partial = len(_rows(tmp_path / release.name))
    assert 4 <= partial < 16
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    rows = _rows(tmp_path / release.name)
    ids = [row["episode_id"] for row in rows]
    assert len(ids) == len(set(ids)) == 16
    transcripts = list((tmp_path / release.name).glob("*/transcripts/*.json.gz"))
    assert {p.name.split(".")[0] for p in transcripts} == set(ids)
    assert pl.read_parquet(next((tmp_path / release.name).glob("*/results.parquet"))).height == 16
    for path in tmp_path.rglob("*"):  # the key is written nowhere
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                import gzip

                data = gzip.decompress(data)
            assert KEY.encode() not in data, path
    assert any(KEY in seen for seen in loopback.keys_seen)  # ... but it was sent


def test_reminders_end_the_episode_only_when_they_come_in_a_row(release, server, tmp_path, monkeypatch):
    loopback, url = server
    loopback.script = Script(at={("*", 1): "no_tool", ("*", 3): "empty"})
    spaced = run(release, url, tmp_path / "spaced", "agent.max_reminders=1", monkeypatch=monkeypatch)
    assert spaced["success"].all() and (spaced["reminders"] == 2).all()
    loopback.script = Script(at={("*", 1): "no_tool", ("*", 2): "empty"})
    in_a_row = run(release, url, tmp_path / "row", "agent.max_reminders=1", monkeypatch=monkeypatch)
    assert set(in_a_row["end_reason"]) == {"no_tool_call"}
    # the reply that ends the episode is no reminder: one was sent, the server saw one
    assert (in_a_row["reminders"] == 1).all() and (in_a_row["turns"] == 3).all()


def test_another_server_is_another_run_never_a_silent_reuse(release, server, tmp_path, monkeypatch):
    from gridbench_core.errors import UserError

    loopback, url = server
    first = run(release, url, tmp_path, "domains=[toy]", monkeypatch=monkeypatch)
    other = LoopbackServer(ScriptedPolicy(release), Script(), api_key=KEY)
    other_url = other.start()
    try:
        with pytest.raises(UserError, match="config.base_url: .* -> "):
            run(release, other_url, tmp_path, "domains=[toy]", monkeypatch=monkeypatch)
        second = run(release, other_url, tmp_path, "domains=[toy]", "run_name=other", monkeypatch=monkeypatch)
    finally:
        other.stop()
    assert other.requests > 0  # the other server was asked: its results are not the first one's
    assert set(first["episode_id"]).isdisjoint(set(second.filter(pl.col("run") == "other")["episode_id"]))


def test_the_model_named_on_the_command_line_reaches_the_results_unchanged(
    release, server, tmp_path, monkeypatch
):
    """``agent.model=...`` travels as one typed value (LLMSettings.model) from the command line
    to results.parquet and run.json: slashes, colons, dots and case as given. The run's name
    (and ``agent`` column) is its folder-safe label."""
    _, url = server
    model = "Org/Scripted-Model_1.5:Q4 v2"
    frame = run(release, url, tmp_path, f"agent.model='{model}'", "trials=1", monkeypatch=monkeypatch)
    assert frame.height and frame["model"].unique().to_list() == [model]
    assert frame["agent"].unique().to_list() == ["llm-Org-Scripted-Model_1.5-Q4-v2"]
    (run_json,) = (tmp_path / release.name).glob("*/run.json")
    assert json.loads(run_json.read_text())["identity"]["config"]["model"] == model


def test_every_client_shares_one_tls_context_that_verifies_hosts():
    """A run opens a client per few episodes in flight; each used to read the CA bundle into
    a context of its own (about 30 ms of CPU). One context, as strict as the default."""
    import ssl

    from gridbench.agents.llm.runner import make_client
    from gridbench_core.llm_settings import LLMSettings

    settings = LLMSettings.from_yaml_defaults(model="m", base_url="http://127.0.0.1:9/v1")
    clients = [make_client(settings, 4) for _ in range(3)]
    # the pool under the capped transport under the openai client (private attributes: read only)
    contexts = [client._client._transport.inner._pool._ssl_context for client in clients]
    assert all(context is contexts[0] for context in contexts)
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname
    assert contexts[0].minimum_version >= ssl.create_default_context().minimum_version
