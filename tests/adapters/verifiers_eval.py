"""Run in the verifiers venv (``make verifiers-env``) by tests/adapters/test_front_parity.py:
verifiers' own evaluation loop (``run_eval``) over gridbench tasks, against the scripted
loopback model misbehaving at the turns the parity test names; prints one JSON line per
episode (the results row the harness put on the trace, its reward, whether it went through).

    .venv-verifiers/bin/python -m tests.adapters.verifiers_eval RELEASE OUT RATE TASK_ID,... [FAULTS_JSON]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import gridbench.adapters.verifiers_env as gv
from gridbench.agents.llm.loopback import LoopbackServer, Script, ScriptedPolicy


def main(argv: list[str]) -> None:
    from verifiers.v1.cli.eval.runner import run_eval

    release, out, rate, ids = Path(argv[0]), argv[1], float(argv[2]), argv[3].split(",")
    faults = {("*", int(turn)): kind for turn, kind in json.loads(argv[4] if len(argv) > 4 else "{}").items()}
    server = LoopbackServer(ScriptedPolicy(release), Script(at=faults))
    url = server.start()
    os.environ["OPENAI_API_KEY"] = "sk-parity"
    try:
        config = gv.eval_config("scripted", url, out, release=str(release), task_ids=ids, failure_rate=rate)
        episodes = asyncio.run(run_eval(config))
    finally:
        server.stop()
    for episode in episodes:
        (trace,) = episode.model_dump()["traces"]
        row = trace["info"].get("gridbench", {})
        print(json.dumps({"ok": episode.ok, "reward": trace["rewards"]["gridbench"]["score"], "row": row}))


if __name__ == "__main__":
    main(sys.argv[1:])
