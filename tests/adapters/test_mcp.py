"""The MCP server, driven by the SDK's own client over stdio and streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

import gridbench
from env import openai_schemas
from tests import ROOT
from tests.adapters.helpers import solving_moves
from tests.helpers_release import build_small


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return build_small(tmp_path_factory.mktemp("mcp"), "mcp")


async def play(client: Client, record) -> dict:
    tools = (await client.list_tools()).tools
    ours = [s["function"] for s in openai_schemas(record.domain)]
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (s["name"], s["description"], s["parameters"]) for s in ours
    ]
    bad = await client.call_tool("set_slot", {"row": "x"})  # breaks the schema: the episode answers
    assert bad.is_error and "missing argument" in json.loads(bad.content[0].text)["message"]
    unknown = await client.call_tool("no_such_tool", {})
    assert unknown.is_error and "unknown tool" in unknown.content[0].text
    for name, arguments in solving_moves(record):
        reply = await client.call_tool(name, arguments)
        assert not reply.is_error and reply.structured_content["status"] == "ok"
    prompt = await client.read_resource("gridbench://prompt")
    assert record.task_id in prompt.contents[0].text
    return json.loads((await client.read_resource("gridbench://score")).contents[0].text)


def test_a_task_is_played_to_success_over_stdio(release):
    record = gridbench.load_release(release).filter(domains=["toy"], hidden_slots=[4])[0]
    args = ["-m", "gridbench.mcp", f"release={release}", f"task={record.task_id}"]

    async def main() -> dict:
        async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
            return await play(client, record)

    score = anyio.run(main)
    assert score["success"] and score["invalid_calls"] == 2 and score["finished"]


def test_a_task_is_played_to_success_over_streamable_http(release):
    record = gridbench.load_release(release).filter(domains=["course"], hidden_slots=[4])[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gridbench.mcp",
            f"release={release}",
            f"task={record.task_id}",
            "transport=http",
            f"port={port}",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read().decode()
                time.sleep(0.05)

        async def main() -> dict:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await play(client, record)

        assert anyio.run(main)["success"]
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "release= is required"),
        (["release=/no/such"], "task= is required"),
        (["release=/no/such", "task=x"], "not a release"),
        (["RELEASE", "task=x"], "unknown argument"),
        (["release=R", "task=nope"], "not tasks of"),
        (["release=R", "task=T", "failure_rate=2"], "failure_rate"),
        (["release=R", "task=T", "transport=carrier-pigeon"], "transport"),
        (["release=R", "task=T", "port=eighty"], "port"),
        (["release=R", "task=T", "transport=http", "port=99999"], "1..65535"),
        (["release=R", "task=T", "transport=http", "host=999.1.1.1"], "cannot listen"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2_with_nothing_on_stdout(release, args, needle, capsys):
    from gridbench.mcp.server import main

    record = gridbench.load_release(release)[0]
    args = [a.replace("=R", f"={release}").replace("=T", f"={record.task_id}") for a in args]
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: ") and needle in out.err and out.err.count("\n") == 1


def test_the_command_line_itself_exits_2_with_nothing_on_stdout(release):
    out = subprocess.run(
        [sys.executable, "-m", "gridbench.mcp", f"release={release}", "task=nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == "" and out.stderr.startswith("error: ")
    assert out.stderr.count("\n") == 1 and "not tasks of" in out.stderr
