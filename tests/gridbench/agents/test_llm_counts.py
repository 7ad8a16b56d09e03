"""The runner's counts equal what the server saw, at concurrency 1 and 64: a loopback server
that misbehaves at random (429, 500, text calls, malformed calls, cut and empty replies,
prose, several calls in one reply, reasoning) counts per task what it received and sent; the
results rows of every episode of that task must add up to the same numbers.

Time-outs are left out here: whether a reply came "in time" depends on how busy this machine
is, so the server could not say whether the client got it. The timeout fault has its own
test (test_llm_runner: each recoverable fault), and every request the server saw is a turn
or a retry of the runner's at any concurrency (the last assertion)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gridbench.agents.llm.loopback import RECOVERABLE, LoopbackServer, Script, ScriptedPolicy
from gridbench.commands.evaluate import evaluate
from tests.helpers_release import compose_config

KEY = "sk-loopback-counts"
KINDS = tuple(kind for kind in RECOVERABLE if kind != "timeout")


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


@pytest.mark.parametrize("concurrency", [1, 64])
def test_counts_equal_what_the_server_saw(concurrency, release, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = LoopbackServer(ScriptedPolicy(release), Script(rate=0.5, seed=11, kinds=KINDS), api_key=KEY)
    url = server.start()
    try:
        cfg = compose_config(
            [
                f"release={release}",
                "agent=llm",
                "agent.model=scripted",
                f"agent.base_url={url}",
                f"output_root={tmp_path}",
                "agent.timeout=60",
                "agent.max_retries=3",
                f"agent.concurrency={concurrency}",
                "failure_rates=[0.0,0.1,0.3]",
                "trials=3",
            ],
            "evaluate",
            "apps",
        )
        assert evaluate(cfg) == 0
    finally:
        server.stop()
    frame = pl.read_parquet(next((tmp_path / release.name).glob("*/results.parquet")))
    assert frame.height == 72
    sums = frame.group_by("task_id").agg(
        pl.col(
            "turns",
            "api_retries",
            "text_tool_calls",
            "malformed_tool_calls",
            "reminders",
            "prompt_tokens",
            "completion_tokens",
            "reasoning_tokens",
        ).sum()
    )
    assert set(sums["task_id"]) == set(server.seen)
    for row in sums.iter_rows(named=True):
        seen = server.seen[row["task_id"]]
        assert (
            row["turns"],
            row["api_retries"],
            row["text_tool_calls"],
            row["malformed_tool_calls"],
            row["reminders"],
            row["prompt_tokens"],
            row["completion_tokens"],
            row["reasoning_tokens"],
        ) == (
            seen.replies,
            seen.errors + seen.abandoned,
            seen.text_calls,
            seen.malformed,
            seen.reminders,
            seen.prompt_tokens,
            seen.completion_tokens,
            seen.reasoning_tokens,
        ), row["task_id"]
    totals = frame.select(pl.col("api_retries", "text_tool_calls", "malformed_tool_calls", "reminders").sum())
    assert all(value > 0 for value in totals.row(0)), totals  # every kind of count was exercised
    assert sum(s.requests for s in server.seen.values()) == frame["turns"].sum() + frame["api_retries"].sum()
