"""One agent loop behind both front ends: the same scripted model (the loopback server over
real HTTP, misbehaving the same way at the same turns) played by ``make eval agent=llm`` and
by the Inspect task through Inspect's own OpenAI-compatible provider gives the same
transcripts, the same counts and the same scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import gridbench
from gridbench.agents.llm.loopback import LoopbackServer, Script, ScriptedPolicy
from gridbench.commands.evaluate import evaluate
from pipeline.evaluation.runs import read_transcript
from tests.helpers_release import compose_config

KEY = "sk-parity"
RATE = 0.3
# what the scripted model does at each turn, whichever front end asks it
FAULTS = {
    1: "text_hermes",
    2: "malformed",
    3: "length",
    4: "reasoning",
    5: "unknown_tool",
    6: "no_tool",
    7: "multi",
    8: "text_json",
    9: "empty",
    10: "no_tool",
}
COUNTS = (
    "success",
    "fraction_correct",
    "steps",
    "invalid_calls",
    "failed_calls",
    "end_reason",
    "turns",
    "text_tool_calls",
    "malformed_tool_calls",
    "reminders",
    "length_cuts",
    "completion_tokens",
    "reasoning_tokens",
)


@pytest.fixture(scope="session")
def release(small_release) -> Path:
    return small_release


def serve(release: Path) -> LoopbackServer:
    return LoopbackServer(ScriptedPolicy(release), Script(at={("*", t): k for t, k in FAULTS.items()}))


def via_runner(release: Path, ids: list[str], out: Path) -> dict[str, tuple[dict, list]]:
    server = serve(release)
    url = server.start()
    try:
        cfg = compose_config(
            [
                f"release={release}",
                "agent=llm",
                "agent.model=scripted",
                f"agent.base_url={url}",
                f"output_root={out}",
                f"failure_rates=[{RATE}]",
                "hidden_slots=[4]",
                "decoy_budgets=[3]",
            ],
            "evaluate",
            "apps",
        )
        assert evaluate(cfg) == 0
    finally:
        server.stop()
    folder = next((out / release.name).iterdir())
    rows = pl.read_parquet(folder / "results.parquet").to_dicts()
    return {
        row["task_id"]: (
            row,
            read_transcript(folder / "transcripts" / f"{row['episode_id']}.json.gz")["transcript"],
        )
        for row in rows
        if row["task_id"] in ids
    }


def via_inspect(release: Path, ids: list[str], out: Path, monkeypatch) -> dict[str, tuple[dict, list]]:
    server = serve(release)
    url = server.start()
    monkeypatch.setenv("LOOPBACK_BASE_URL", url)
    monkeypatch.setenv("LOOPBACK_API_KEY", KEY)
    from inspect_ai import eval as inspect_eval  # seconds to import: only where it runs
    from inspect_ai.log import read_eval_log

    try:
        (log,) = inspect_eval(
            "gridbench/gridbench",
            model="openai-api/loopback/scripted",
            task_args={"release": str(release), "task_ids": ids, "failure_rate": RATE},
            log_dir=str(out),
            display="none",
        )
    finally:
        server.stop()
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    return {
        sample.id: (sample.scores["grid_score"].metadata, [_as_dict(m) for m in sample.messages])
        for sample in log.samples
    }


def _as_dict(message: Any) -> dict[str, Any]:
    """An Inspect chat message in the runner's transcript format."""
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.role == "assistant":
        reasoning = (
            [p.reasoning for p in message.content if getattr(p, "type", "") == "reasoning"]
            if isinstance(message.content, list)
            else []
        )
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function, "arguments": json.dumps(c.arguments)},
                }
                for c in message.tool_calls
            ]
        if reasoning:
            out["reasoning_content"] = "".join(reasoning)
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
    return out


def _normal(messages: list[dict]) -> list[tuple]:
    """A transcript with the arguments of each call parsed (the JSON text of the same object
    may be spaced differently)."""
    out = []
    for m in messages:
        calls = tuple(
            (
                c["id"],
                c["function"]["name"],
                json.dumps(json.loads(c["function"]["arguments"]), sort_keys=True),
            )
            for c in m.get("tool_calls") or []
        )
        out.append(
            (m["role"], m.get("content") or "", calls, m.get("tool_call_id"), m.get("reasoning_content"))
        )
    return out


def test_make_eval_and_inspect_play_the_same_transcripts_counts_and_scores(release, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    held = gridbench.load_release(release).filter(hidden_slots=[4], decoy_budgets=[3])
    ids = [record.task_id for record in held]
    runner = via_runner(release, ids, tmp_path / "runs")
    inspect = via_inspect(release, ids, tmp_path / "logs", monkeypatch)
    assert sorted(runner) == sorted(inspect) == sorted(ids) and len(ids) == 2
    for task_id in ids:
        (row, ours), (score, theirs) = runner[task_id], inspect[task_id]
        assert _normal(ours) == _normal(theirs), task_id
        assert {k: row[k] for k in COUNTS} == {k: score[k] for k in COUNTS}, task_id
    rows = [runner[t][0] for t in ids]
    # the faults were all met: text calls, malformed calls, reminders, a cut, reasoning
    for column in ("text_tool_calls", "malformed_tool_calls", "reminders", "length_cuts", "reasoning_tokens"):
        assert all(r[column] >= 1 for r in rows), (column, [r[column] for r in rows])
    assert all(r["success"] and r["end_reason"] == "done" for r in rows)
