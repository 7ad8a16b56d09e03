"""The MCP server over HTTP against what an outside run tried (hostile round 4): clients that
drop mid-call leave no traceback on stderr; one client cannot hold more than its share of
sessions (nor lock everyone else out), idle sessions end; ``host=::1`` prints a URL that
works; the session id's role as the only credential is said in ``--help``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import gridbench
from tests import ROOT

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def release(small_release) -> Path:
    return small_release


def _free_port(family: int = socket.AF_INET, host: str = "127.0.0.1") -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _serve(release: Path, *args: str, host: str = "127.0.0.1") -> tuple[subprocess.Popen, str, str]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    port = _free_port(family, host)
    task = gridbench.load_release(release)[0].task_id
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gridbench.mcp",
            f"release={release}",
            "transport=http",
            f"host={host}",
            f"port={port}",
            f"task={task}",
            *args,
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = server.stderr.readline()
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return server, line, f"{host}:{port}"
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, line + server.stderr.read()
            time.sleep(0.05)


def _stop(server: subprocess.Popen) -> str:
    server.terminate()
    _, err = server.communicate(timeout=20)
    return err


def _open(url: str) -> httpx.Response:
    return httpx.post(url, json=INIT, headers=HEADERS, timeout=20)


def _url(where: str) -> str:
    host, _, port = where.rpartition(":")
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"


def test_clients_that_drop_mid_call_leave_no_traceback(release):
    server, _, where = _serve(release)
    host, _, port = where.rpartition(":")
    url = _url(where)
    try:
        opened = _open(url)
        session = opened.headers["mcp-session-id"]
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_current_grid_state"},
        }
        body = json.dumps({**call, "params": {**call["params"], "arguments": {}}}).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n"
            f"Mcp-Session-Id: {session}\r\nContent-Length: {len(body) + 40}\r\n\r\n"
        ).encode()

        def drop(reset: bool) -> None:
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(head + body[: len(body) // 2])  # a body that never comes whole
                if reset:  # gone at once, with a reset rather than a close
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

        threads = [threading.Thread(target=drop, args=(k % 2 == 0,)) for k in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        time.sleep(1.0)  # let the server notice every one
        headers = {**HEADERS, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
        reply = httpx.post(url, content=body, headers=headers, timeout=20)
        assert reply.status_code == 200 and "empty_cells" in reply.text  # still serving
    finally:
        err = _stop(server)
    assert "Traceback" not in err and "ClientDisconnect" not in err, err[:2000]


def test_one_client_holds_at_most_its_share_of_sessions(release):
    server, _, where = _serve(release, "sessions_per_client=3")
    url = _url(where)
    try:
        sessions = [_open(url) for _ in range(3)]
        assert all(r.status_code == 200 and r.headers.get("mcp-session-id") for r in sessions)
        refused = _open(url)
        assert refused.status_code == 429 and "already holds 3 open sessions" in refused.text
        first = sessions[0].headers["mcp-session-id"]
        ended = httpx.delete(url, headers={"Mcp-Session-Id": first, "Mcp-Protocol-Version": "2025-06-18"})
        assert ended.status_code < 300
        assert _open(url).status_code == 200  # the ended session no longer counts
    finally:
        _stop(server)


def test_an_idle_session_expires_and_no_longer_counts(release):
    server, _, where = _serve(release, "sessions_per_client=1", "session_idle=1")
    url = _url(where)
    try:
        first = _open(url)
        assert first.status_code == 200 and _open(url).status_code == 429
        idle_since = time.monotonic()
        time.sleep(1.0)  # its second of idleness; then asked again until it has ended, within 3 s
        while (opened := _open(url).status_code) == 429 and time.monotonic() < idle_since + 3.0:
            time.sleep(0.2)
        assert opened == 200
        headers = {
            **HEADERS,
            "Mcp-Session-Id": first.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-06-18",
        }
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        assert httpx.post(url, json=ping, headers=headers, timeout=20).status_code == 404  # it ended
    finally:
        _stop(server)


def test_an_ipv6_host_gets_a_url_that_works(release):
    server, line, where = _serve(release, host="::1")
    try:
        url = _url(where)
        assert f"gridbench MCP server at {url}:" in line, line
        assert _open(url).status_code == 200
    finally:
        _stop(server)


def test_the_session_limits_are_checked_and_the_credential_is_documented(capsys):
    from gridbench.mcp.server import main, server_url

    assert server_url("::1", 8765) == "http://[::1]:8765/mcp"
    assert server_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert main(["--help"]) == 0
    assert "only credential" in capsys.readouterr().out
    for bad in ("sessions_per_client=0", "max_sessions=-1", "session_idle=0", "session_idle=many"):
        assert main(["release=R", "task=T", "transport=http", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and bad.split("=")[0] in err and err.count("\n") == 1


def test_the_score_resource_tells_nothing_of_the_truth_until_the_episode_is_over(release):
    """Hostile round 7: placing each candidate in turn and reading gridbench://score's
    wrong_cells solved a task with no query or check. Mid-episode the resource now reads the
    same whichever candidate a cell holds; after done it is the whole score."""
    from gridbench.adapters.core import Session

    record = next(r for r in gridbench.load_release(release) if any(o["decoys"] for o in r.answer["roles"]))
    role = next(role for role in record.answer["roles"] if role["decoys"])
    seen = []
    for item in [role["truth"], *role["decoys"], *role["filtered"]]:
        session = Session(record.task, record.answer)
        session.call("set_slot", {"row": role["row"], "col": role["col"], "id": item})
        seen.append(json.dumps(session.progress(), sort_keys=True))
    assert len(set(seen)) == 1, seen
    session.call("done", {})
    assert session.progress() == session.score() and session.progress()["success"] is False
