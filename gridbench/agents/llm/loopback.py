"""A loopback OpenAI-compatible chat-completions server that plays a scripted policy, for
testing and benchmarking the runner over real HTTP with the real ``openai`` client -- and for
users to smoke-test their setup without a model:

    python -m gridbench.agents.llm.loopback release=outputs/releases/gridbench-v2.0.0 port=8765
    make eval ARGS="agent=llm agent.model=scripted agent.base_url=http://127.0.0.1:8765/v1"

The policy reads the release's answer files (it is a test oracle, not a model): it places each
hidden cell's truth with ``set_slot`` and calls ``done``, re-issuing a call whose result was
``failed`` or ``error``. ``faults`` injects what real servers do, by (task, turn) or at random:
``http_429``, ``http_500`` (once each, then retried by the client), ``http_500_always``,
``timeout`` (once), ``context`` (context length exceeded), ``text_hermes`` and ``text_json``
(tool calls written in the text), ``malformed`` (bad argument JSON), ``unknown_tool``,
``multi`` (several calls in one reply), ``length`` (cut at max_tokens, no call), ``empty``,
``no_tool`` (prose only), ``silent`` (prose only, for ever), ``reasoning`` (a
``reasoning_content`` field), ``no_id`` (a tool call without an id); and what hostile or
broken servers do: ``http_401``, ``drip`` (the reply one byte every ``drip_s`` seconds),
``not_json`` (a 200 whose body is HTML), ``bad_usage`` (token counts that are not integers),
``deep_args`` (arguments nested 100,000 deep), ``huge`` (a body of ``huge_bytes`` that
announces no length), ``gzip_bomb`` (``huge_bytes`` of JSON gzipped to a few kilobytes),
``gzipped`` (a good reply, gzipped), ``surrogate`` (text with a lone surrogate),
``slow`` (a correct reply after ``slow_s`` seconds).

The server counts, per task, what it saw and sent (:class:`Seen`): requests, error replies,
replies, tool calls written in the text, malformed calls, tokens, and the reminders the
conversation holds -- the tests compare them with the runner's results rows.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASK_ID = re.compile(r"Task (\S+) \(")
RECOVERABLE = (
    "http_429",
    "http_500",
    "timeout",
    "text_hermes",
    "text_json",
    "malformed",
    "unknown_tool",
    "multi",
    "length",
    "empty",
    "no_tool",
    "reasoning",
    "no_id",
)
FATAL = ("http_500_always", "context", "silent")
HOSTILE = (
    "http_401",
    "drip",
    "not_json",
    "bad_usage",
    "deep_args",
    "huge",
    "gzip_bomb",
    "gzipped",
    "surrogate",
    "slow",
)


@dataclass
class Seen:
    """What the server saw of one task's episodes and sent back (replies sent late, after the
    client gave up, are not counted as replies)."""

    requests: int = 0
    errors: int = 0  # 4xx / 5xx replies sent
    abandoned: int = 0  # requests the client gave up on (a timeout fault, a drip)
    replies: int = 0  # 200 replies with a chat completion sent in time
    text_calls: int = 0
    malformed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    reminders: int = 0  # answered requests that end with a reminder


@dataclass
class Script:
    """Which fault happens when: ``at[(task_id or "*", turn)] = kind``, or, with ``rate`` > 0,
    a kind drawn from ``kinds`` at that rate (seeded by task and turn)."""

    at: dict[tuple[str, int], str] = field(default_factory=dict)
    rate: float = 0.0
    kinds: tuple[str, ...] = RECOVERABLE
    seed: int = 0
    timeout_s: float = 3.0  # how long a "timeout" fault sleeps
    drip_s: float = 0.5  # seconds between the bytes of a "drip" reply
    slow_s: float = 1.0  # how long a "slow" reply takes
    huge_bytes: int = 32 * 1024 * 1024

    def fault(self, task_id: str, turn: int) -> str:
        """The fault kind to inject at ``turn`` of ``task_id``, or ``""`` for none."""
        kind = self.at.get((task_id, turn)) or self.at.get(("*", turn), "")
        if kind or self.rate <= 0:
            return kind
        rng = random.Random(f"{self.seed}|{task_id}|{turn}")
        return rng.choice(self.kinds) if rng.random() < self.rate else ""


class ScriptedPolicy:
    """The oracle: the next call of "set every truth, then done", read off the conversation."""

    def __init__(self, release: Path | None = None, answers: Any = ()) -> None:
        """The plans of a release's answer files, and of ``answers`` (answer dicts: tasks
        generated on the fly)."""
        self.plans: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        paths = sorted((release / "answers").rglob("*.json")) if release is not None else []
        for answer in [*(json.loads(path.read_text()) for path in paths), *answers]:
            plan = [
                ("set_slot", {"row": r["row"], "col": r["col"], "id": r["truth"]}) for r in answer["roles"]
            ]
            self.plans[answer["task_id"]] = [*plan, ("done", {})]

    def next_calls(self, task_id: str, messages: list[dict[str, Any]], count: int = 1) -> list[Any]:
        """The first ``count`` steps of the plan that have not succeeded yet (``done`` only
        once every cell is placed)."""
        plan = self.plans.get(task_id, [("done", {})])
        succeeded = _succeeded(messages)
        todo = [step for step in plan[:-1] if _key(*step) not in succeeded]
        return (todo or plan[-1:])[:count]


def _key(name: str, arguments: Any) -> str:
    return f"{name}:{json.dumps(arguments, sort_keys=True)}"


def _succeeded(messages: list[dict[str, Any]]) -> set[str]:
    """The calls of the conversation whose result was ``ok``: structured calls are paired with
    their tool messages by id, calls written in the text with the responses that follow."""
    from gridbench.agents.llm.toolcalls import parse_arguments, text_calls

    by_id: dict[str, str] = {}
    pending: list[str] = []
    succeeded: set[str] = set()
    for message in messages:
        role, content = message.get("role"), str(message.get("content") or "")
        ok = '"status": "ok"' in content
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                arguments, _ = parse_arguments(function.get("arguments"))
                by_id[str(call.get("id"))] = _key(str(function.get("name")), arguments)
            if not message.get("tool_calls"):
                pending = [_key(c.name, c.arguments) for c in text_calls(content)]
        elif role == "tool" and ok and str(message.get("tool_call_id")) in by_id:
            succeeded.add(by_id[str(message.get("tool_call_id"))])
        elif role == "user" and content.startswith("<tool_response>") and pending:
            key = pending.pop(0)
            if ok:
                succeeded.add(key)
    return succeeded


class LoopbackServer:
    """An HTTP/1.1 server (keep-alive) on 127.0.0.1 answering ``POST /v1/chat/completions``."""

    def __init__(
        self, policy: ScriptedPolicy, script: Script | None = None, api_key: str | None = None
    ) -> None:
        self.policy, self.script, self.api_key = policy, script or Script(), api_key
        self.attempts: dict[tuple[str, int, str], int] = {}
        self.requests = 0
        self.keys_seen: set[str] = set()
        self.fields_seen: set[str] = set()  # top-level request fields (extra_body arrives here)
        self.seen: dict[str, Seen] = {}
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None

    # Lifecycle --------------------------------------------------------------------------

    def start(self) -> str:
        """Serve from a background thread; returns the base URL (``http://127.0.0.1:P/v1``)."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._client, "127.0.0.1", self.port)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Close the server and its connections, stop the loop and join the thread."""
        if self._loop is None or self._server is None:
            return
        loop, server = self._loop, self._server

        async def shutdown() -> None:
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = self._server = None

    # HTTP --------------------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, data, extra, drip = await self._handle(lines[0], headers, body)
                kind = "text/html" if data.startswith(b"<") else "application/json"  # (a bomb: JSON too)
                closing = "connection: close" in extra  # no length: the body ends with the connection
                length = "" if closing else f"content-length: {len(data)}\r\n"
                writer.write(f"HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\n{length}{extra}\r\n".encode())
                if drip:
                    for k in range(len(data)):
                        writer.write(data[k : k + 1])
                        await writer.drain()
                        await asyncio.sleep(drip)
                else:
                    writer.write(data)
                await writer.drain()
                if closing:
                    break
        except (
            asyncio.IncompleteReadError,
            ConnectionError,
            asyncio.LimitOverrunError,
            asyncio.CancelledError,
        ):
            pass
        finally:
            writer.close()

    def _count(self, task_id: str) -> Seen:
        return self.seen.setdefault(task_id, Seen())

    async def _handle(
        self, request_line: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, str, float]:
        """(status, body, extra headers, seconds between the body's bytes: 0 = at once)."""
        self.requests += 1
        self.keys_seen.add(headers.get("authorization", ""))
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, _json({"error": {"message": "bad key", "type": "invalid_request_error"}}), "", 0.0
        if "/chat/completions" not in request_line:
            return 404, _json({"error": {"message": "not found"}}), "", 0.0
        request = json.loads(body)
        self.fields_seen |= set(request)
        messages = request.get("messages", [])
        task_id = _task_id(messages)
        seen = self._count(task_id)
        seen.requests += 1
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        kind = self.script.fault(task_id, turn)
        attempt = self.attempts[(task_id, turn, kind)] = self.attempts.get((task_id, turn, kind), 0) + 1
        failure = _failure(kind, attempt)
        if failure is not None:
            seen.errors += 1
            return failure
        if kind == "timeout" and attempt == 1:
            seen.abandoned += 1
            await asyncio.sleep(self.script.timeout_s)
            return 200, _json(self._reply(task_id, messages, "", request, len(body))), "", 0.0
        if kind == "slow":
            await asyncio.sleep(self.script.slow_s)
        hostile = self._hostile(kind, seen)
        if hostile is not None:
            return hostile
        payload = self._reply(task_id, messages, kind, request, len(body))
        self._tally(seen, kind, payload, messages)
        if kind == "gzipped":  # a well-formed reply, compressed although identity was asked for
            import gzip

            return 200, gzip.compress(_json(payload)), "content-encoding: gzip\r\n", 0.0
        return 200, _json(payload), "", 0.0

    def _hostile(self, kind: str, seen: Seen) -> tuple[int, bytes, str, float] | None:
        if kind == "drip":
            seen.abandoned += 1
            return 200, _json({"choices": [], "padding": "x" * 64}), "", self.script.drip_s
        if kind == "not_json":
            return 200, b"<html><body>502 Bad Gateway (proxy)</body></html>", "", 0.0
        if kind == "huge":
            return 200, b'{"x": "' + b"y" * self.script.huge_bytes + b'"}', "connection: close\r\n", 0.0
        if kind == "gzip_bomb":
            import gzip

            bomb = gzip.compress(b'{"x": "' + b"0" * self.script.huge_bytes + b'"}', compresslevel=9)
            return 200, bomb, "content-encoding: gzip\r\n", 0.0
        return None

    def _tally(self, seen: Seen, kind: str, payload: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        """Count a reply sent in time (and the reminder the request ends with, if it does: a
        reminder is counted once, by the request that got its answer)."""
        seen.replies += 1
        seen.reminders += _is_reminder(messages[-1] if messages else {})
        usage = payload.get("usage") or {}
        if kind != "bad_usage":
            seen.prompt_tokens += usage.get("prompt_tokens", 0)
            seen.completion_tokens += usage.get("completion_tokens", 0)
            seen.reasoning_tokens += (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
        message = payload["choices"][0]["message"]
        if kind == "text_hermes":
            seen.text_calls += str(message["content"]).count("<tool_call>")
        elif kind == "text_json":
            seen.text_calls += 1
        elif kind in ("malformed", "unknown_tool", "deep_args"):
            seen.malformed += 1

    # The reply -----------------------------------------------------------------------------

    def _reply(
        self, task_id: str, messages: list[dict[str, Any]], kind: str, request: dict[str, Any], size: int
    ) -> dict[str, Any]:
        calls = self.policy.next_calls(task_id, messages, 3 if kind == "multi" else 1)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "tool_calls"
        if kind == "text_hermes":
            message["content"] = "Placing the next item.\n" + "".join(
                f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls
            )
            finish = "stop"
        elif kind == "text_json":
            name, arguments = calls[0]
            message["content"] = json.dumps({"name": name, "arguments": arguments})
            finish = "stop"
        elif kind in ("length", "empty", "no_tool", "silent"):
            message["content"] = {
                "length": "Let me think step by step about the",
                "empty": "",
                "no_tool": "I believe the grid is nearly done.",
                "silent": "I will not call any tool.",
            }[kind]
            finish = "length" if kind == "length" else "stop"
        else:
            message["tool_calls"] = [_call(n, a, k, turn=len(messages)) for k, (n, a) in enumerate(calls)]
            if kind == "malformed":
                message["tool_calls"][0]["function"]["arguments"] = '{"row": 1, "col": '
            if kind == "unknown_tool":
                message["tool_calls"].insert(0, _call("frobnicate", {"x": 1}, 9, len(messages)))
            if kind == "no_id":
                message["tool_calls"][0].pop("id")
            if kind == "deep_args":
                message["tool_calls"][0]["function"]["arguments"] = "[" * 100_000 + "]" * 100_000
        if kind == "reasoning":
            message["reasoning_content"] = "The truth of this cell is forced by the windows."
        if kind == "surrogate":  # a lone surrogate: valid JSON, no UTF-8
            message["content"] = "odd text \ud800 from a broken tokenizer"
        prompt = size // 4  # about four bytes a token
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": 12,
            "total_tokens": prompt + 12,
            "completion_tokens_details": {"reasoning_tokens": 5 if kind == "reasoning" else 0},
        }
        if kind == "bad_usage":
            usage = {"prompt_tokens": "many", "completion_tokens": 1.5, "total_tokens": None}
        return {
            "id": f"chatcmpl-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _failure(kind: str, attempt: int) -> tuple[int, bytes, str, float] | None:
    """The error reply of a fault, if this attempt gets one."""
    if kind in ("http_429", "http_500") and attempt == 1:
        code = 429 if kind == "http_429" else 500
        return code, _json({"error": {"message": f"injected {code}"}}), "retry-after: 0\r\n", 0.0
    if kind == "http_500_always":
        return 500, _json({"error": {"message": "injected permanent 500"}}), "", 0.0
    if kind == "http_401":
        return 401, _json({"error": {"message": "Incorrect API key provided", "type": "auth"}}), "", 0.0
    if kind == "context":
        error = {
            "message": "This model's maximum context length is 8192 tokens",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
        return 400, _json({"error": error}), "", 0.0
    return None


def _is_reminder(message: dict[str, Any]) -> bool:
    from gridbench.agents.llm.loop import LENGTH_REMINDER, REMINDER

    return message.get("role") == "user" and message.get("content") in (REMINDER, LENGTH_REMINDER)


def _call(name: str, arguments: dict[str, Any], k: int, turn: int) -> dict[str, Any]:
    return {
        "id": f"call_{turn}_{k}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _task_id(messages: list[dict[str, Any]]) -> str:
    for message in messages[:3]:
        found = TASK_ID.search(str(message.get("content") or ""))
        if found:
            return found.group(1)
    return ""


def main(argv: list[str]) -> None:
    """``python -m gridbench.agents.llm.loopback release=PATH [port=8765] [rate=0.2]``: serve until
    Ctrl-C."""
    options = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if "release" not in options:
        raise SystemExit("usage: python -m gridbench.agents.llm.loopback release=PATH [port=8765] [rate=0]")
    server = LoopbackServer(
        ScriptedPolicy(Path(options["release"])), Script(rate=float(options.get("rate", 0)))
    )
    server.port = int(options.get("port", 8765))
    print(f"scripted OpenAI-compatible server at {server.start()}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
