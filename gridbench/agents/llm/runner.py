"""The LLM agent: one chat-completions conversation per episode over any OpenAI-compatible
server (OpenAI, vLLM, SGLang, Ollama, LM Studio, llama.cpp), with the official ``openai``
SDK's async client.

The turn logic (which tool calls a reply holds, how each is answered, reminders, end reasons,
counts) is :class:`gridbench.agents.llm.loop.AgentLoop`, shared with the Inspect AI solver.
This module asks the server, and owns what can go wrong on the way:

- **retries** of 429, 408, 409, 5xx, time-outs and lost connections, ``max_retries`` times
  with backoff (``retry-after`` honoured up to a minute), counted one by one in
  ``api_retries`` (the SDK's own retries are off, so every request the server saw is known);
- **deadlines**: ``timeout`` bounds each request as a whole (a server that drips one byte a
  second cannot hold it: the SDK's timeout alone bounds each read), ``episode_timeout`` the
  whole episode;
- **replies it cannot use** (a body that is not JSON, nested too deep, larger than
  ``max_reply_bytes``, without choices) end the episode with ``end_reason=api_error``, never a
  traceback; a ``usage`` that is not integers is counted in ``usage_errors``;
- **a refused key** (401 / 403) raises :class:`AuthenticationStop`: the run stops at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import math
import os
import random
import ssl
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx2

from gridbench.agents.llm.loop import END_REASONS, AgentLoop, LoopSettings, Outcome, Reply, parse_reply
from gridbench.agents.llm.prompt import PromptTemplates, render
from gridbench.env import Episode, openai_schemas
from gridbench_core.errors import UserError, terminal_text
from gridbench_core.llm_settings import LLMSettings

if TYPE_CHECKING:  # imported where a client is made or an error is read: importing the runner
    import openai  # (and every adapter that names it) then costs 0.4 s less

__all__ = ["END_REASONS", "AuthenticationStop", "LLMAgent", "LLMSettings", "Outcome", "make_client"]

CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "max_model_len",
)
RETRY_STATUSES = (408, 409, 429)
MAX_RETRY_AFTER_S = 60.0
POOL = 8  # episodes per client (connections per pool)


class AuthenticationStop(UserError):
    """The server refused the API key (401 / 403): every episode would fail the same way."""


class ReplyTooLarge(httpx2.TransportError):
    """A reply body beyond ``max_reply_bytes`` (read no further)."""


@dataclass
class Activity:
    """What the agent is doing, across its episodes, for the progress line."""

    episodes: int = 0  # in flight
    requests: int = 0  # in flight
    turns: int = 0
    retries: int = 0
    last_reply: float = field(default_factory=time.monotonic)


def api_key(settings: LLMSettings) -> str:
    """The key from the environment variable the settings name. Local servers take any key;
    the OpenAI endpoint needs a real one (a clear error otherwise)."""
    key = os.environ.get(settings.api_key_env, "")
    if not key and not settings.base_url:
        raise UserError(
            f"no API key: set the environment variable {settings.api_key_env} (or "
            "agent.api_key_env=NAME), or point agent.base_url at a local server"
        )
    return key or "EMPTY"


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, limit: int) -> None:
        self.stream, self.limit = stream, limit

    async def __aiter__(self) -> Any:
        total = 0
        async for chunk in self.stream:
            total += len(chunk)
            if total > self.limit:
                raise ReplyTooLarge(f"the reply is larger than {self.limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


class _Inflated(httpx2.AsyncByteStream):
    """A gzip or deflate body, decompressed here with its size bounded (a 16 MB bomb would
    otherwise inflate to gigabytes in the client's own decoder)."""

    def __init__(self, stream: Any, limit: int) -> None:
        self.stream, self.limit = stream, limit
        self.decoder = zlib.decompressobj(47)  # a gzip or a zlib header, detected

    async def __aiter__(self) -> Any:
        total = 0
        async for chunk in self.stream:
            data = chunk
            while data:
                try:
                    out = self.decoder.decompress(data, self.limit + 1 - total)
                except zlib.error as error:
                    raise ReplyTooLarge(f"the reply's compressed body is damaged ({error})") from None
                total += len(out)
                if total > self.limit:
                    raise ReplyTooLarge(f"the reply is larger than {self.limit} bytes once decompressed")
                if out:
                    yield out
                data = self.decoder.unconsumed_tail

    async def aclose(self) -> None:
        await self.stream.aclose()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every client's transport shares, made once per process as each transport
    would make its own (the CA bundle, ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` honoured): reading
    the bundle costs about 30 ms of CPU, paid by every client otherwise, and a run opens one
    client per few episodes in flight. A context is safe to share between connections."""
    return httpx2.create_ssl_context()


class CappedTransport(httpx2.AsyncBaseTransport):
    """The default transport, with every reply body cut off (an error) past ``limit`` bytes,
    before and after decompression."""

    def __init__(self, limit: int, concurrency: int) -> None:
        size = max(concurrency, 1) + 4
        self.inner = httpx2.AsyncHTTPTransport(
            verify=tls_context(), limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size)
        )
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request``; the response's body stream stops at the limit."""
        # only the encodings decoded here (httpx asks for br and zstd too when their packages
        # are installed, and a server that honoured that failed every episode)
        request.headers["accept-encoding"] = "gzip, deflate"
        response = await self.inner.handle_async_request(request)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            await response.aclose()
            raise ReplyTooLarge(f"the reply is larger than {self.limit} bytes (it announces {length})")
        stream: httpx2.AsyncByteStream = _CappedStream(response.stream, self.limit)
        headers = response.headers
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            stream = _Inflated(stream, self.limit)
            headers = httpx2.Headers(
                [(k, v) for k, v in headers.multi_items() if k.lower() != "content-encoding"]
            )
        elif encoding not in ("identity", ""):
            await response.aclose()
            raise ReplyTooLarge(
                f"the reply's content-encoding {encoding[:40]!r} is not supported (asked for gzip or deflate)"
            )
        return httpx2.Response(
            response.status_code, headers=headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.inner.aclose()


def make_client(settings: LLMSettings, connections: int | None = None) -> openai.AsyncOpenAI:
    """An async client with a pool of ``connections`` (default: ``concurrency``) connections.
    The SDK's own retries are off: the runner retries, and counts, each request itself."""
    import openai

    for name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING)  # no line per request in run logs
    http = openai.DefaultAsyncHttpxClient(
        transport=CappedTransport(settings.max_reply_bytes, settings.concurrency)
    )
    return openai.AsyncOpenAI(
        api_key=api_key(settings),
        base_url=settings.base_url or None,
        max_retries=0,
        timeout=settings.timeout,
        http_client=http,
    )


def without_lone_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings replaced by ``?``:
    such a string cannot be sent back to the server (or written) as UTF-8."""

    def clean(text: str) -> str:
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")

    if isinstance(value, str):
        return clean(value)
    root: list[Any] = [value]
    stack: list[Any] = [root]
    while stack:  # iterative: the reply may be nested as deep as the parser allowed
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node))
        for key in keys:
            item = node[key]
            if isinstance(item, str):
                node[key] = clean(item)
            elif isinstance(item, dict | list):
                stack.append(item)
        if isinstance(node, dict):
            for key in [k for k in node if isinstance(k, str) and clean(k) != k]:
                node[clean(key)] = node.pop(key)
    return root[0]


def _is_context_error(error: openai.APIStatusError) -> bool:
    text = f"{getattr(error, 'code', '')} {error.message} {getattr(error, 'body', '')}".lower()
    return error.status_code in (400, 413, 422) and any(m in text for m in CONTEXT_MARKERS)


def _retry_after(error: Exception) -> float | None:
    """The wait a reply asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an
    HTTP date, capped at ``MAX_RETRY_AFTER_S`` (a longer wait is the cap, not the 0.5 s backoff
    that would hammer a rate-limited server); None when it asks for none that can be read."""
    response = getattr(error, "response", None)
    if response is None:
        return None
    seconds: float | None = None
    try:
        if response.headers.get("retry-after-ms") is not None:
            seconds = float(response.headers["retry-after-ms"]) / 1000.0
        elif response.headers.get("retry-after") is not None:
            value = response.headers["retry-after"].strip()
            try:
                seconds = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                seconds = when.timestamp() - time.time()
    except (ValueError, TypeError, OverflowError, IndexError):
        return None
    if seconds is None or not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _short(error: BaseException) -> str:
    import openai

    cause = error.__cause__ if isinstance(error, openai.APIConnectionError) and error.__cause__ else error
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return terminal_text(f"{type(cause).__name__}: {text}"[:300] if text else type(cause).__name__)


class _Failure(Exception):
    """A request that failed: ``retry`` when another attempt may succeed."""

    def __init__(self, message: str, retry: bool, end: str = "api_error", wait: float | None = None):
        super().__init__(message)
        self.message, self.retry, self.end, self.wait = message, retry, end, wait


class LLMAgent:
    """Plays episodes through a chat-completions endpoint."""

    name = "llm"

    def __init__(
        self, settings: LLMSettings, templates: PromptTemplates, client: openai.AsyncOpenAI | None = None
    ) -> None:
        self.settings, self.templates = settings, templates
        # Several clients, each with a small connection pool: a pool scans (and probes) its
        # idle connections on every request, so one pool of N connections costs O(N) CPU per
        # request. An episode keeps its client, so its connection is reused turn after turn.
        self.clients = (
            [client]
            if client is not None
            else [make_client(settings, POOL) for _ in range(max(1, -(-settings.concurrency // POOL)))]
        )
        self.client = self.clients[0]
        self._next = 0
        self.activity = Activity()
        self._jitter = random.Random()
        self._request = settings.request()

    async def play(self, episode: Episode) -> Outcome:
        """Play one episode to its end. Never raises for what a server or a model does, except
        :class:`AuthenticationStop` (the key is refused: no episode can succeed)."""
        loop = AgentLoop(episode, LoopSettings.from_llm(self.settings), render(self.templates, episode))
        tools = openai_schemas(episode.task.domain)
        client = self.clients[self._next % len(self.clients)]
        self._next += 1
        limit = self.settings.episode_timeout
        deadline = time.monotonic() + limit if limit else None
        self.activity.episodes += 1
        try:
            while not loop.over:
                reply = await self._ask(client, loop, tools, deadline)
                if reply is None:
                    break
                loop.take(reply)
                self.activity.turns += 1
        finally:
            self.activity.episodes -= 1
        return loop.outcome

    async def _ask(
        self, client: openai.AsyncOpenAI, loop: AgentLoop, tools: list[dict[str, Any]], deadline: float | None
    ) -> Reply | None:
        """One model reply, with retries; None when the episode ended on a failure instead."""
        outcome = loop.outcome
        attempt = 0
        while True:
            try:
                return await self._attempt(client, outcome.messages, tools, deadline)
            except _Failure as failure:
                out_of_time = deadline is not None and time.monotonic() >= deadline
                if not failure.retry or attempt >= self.settings.max_retries or out_of_time:
                    loop.end(failure.end, failure.message)
                    return None
                wait = failure.wait if failure.wait is not None else min(8.0, 0.5 * 2**attempt)
                wait *= 1 - 0.25 * self._jitter.random() if failure.wait is None else 1
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                await asyncio.sleep(wait)
                attempt += 1
                outcome.api_retries += 1
                self.activity.retries += 1

    async def _attempt(
        self,
        client: openai.AsyncOpenAI,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        deadline: float | None,
    ) -> Reply:
        """One request, bounded as a whole by ``timeout`` (and the episode's deadline)."""
        import openai

        budget = self.settings.timeout
        if deadline is not None:
            budget = min(budget, deadline - time.monotonic())
            if budget <= 0:
                raise _Failure(f"the episode's deadline of {self.settings.episode_timeout:g} s passed", False)
        # Everything but the model goes in ``extra_body``: the SDK then sends it as it is
        # instead of walking it through its TypedDict transform, which costs CPU on every turn
        # (several milliseconds on long conversations); the same JSON reaches the server.
        body = {**self._request, "messages": messages, "tools": tools}
        start = time.perf_counter()
        self.activity.requests += 1
        try:
            raw = await asyncio.wait_for(
                client.chat.completions.with_raw_response.create(
                    model=self.settings.model, messages=[], extra_body=body
                ),
                budget,
            )
            data = raw.http_response.content
        except TimeoutError:
            late = deadline is not None and time.monotonic() >= deadline - 1e-3
            what = f"the episode's deadline of {self.settings.episode_timeout:g} s" if late else None
            raise _Failure(
                f"{what or f'the request timeout of {self.settings.timeout:g} s'} passed before the "
                "server finished its reply",
                True,
            ) from None
        except openai.APIStatusError as error:
            raise self._status_failure(error) from None
        except openai.APIConnectionError as error:  # time-outs and lost connections included
            too_large = isinstance(error.__cause__, ReplyTooLarge)
            raise _Failure(_short(error), not too_large) from None
        except openai.OpenAIError as error:
            raise _Failure(_short(error), False) from None
        except Exception as error:  # anything else on the way (a body the SDK cannot encode, ...)
            raise _Failure(f"the request failed: {_short(error)}", False) from None
        finally:
            self.activity.requests -= 1
        latency = (time.perf_counter() - start) * 1000.0
        try:
            parsed = json.loads(data)
        except (ValueError, RecursionError):
            raise _Failure(f"the server's reply is not JSON (starts {data[:60]!r})", False) from None
        if b"\\ud" in data or b"\\uD" in data:  # an escaped surrogate: a lone one has no UTF-8
            parsed = without_lone_surrogates(parsed)
        reply = parse_reply(parsed, latency)
        if isinstance(reply, str):
            raise _Failure(f"the server's reply cannot be used: {reply}", False)
        self.activity.last_reply = time.monotonic()
        return reply

    def _status_failure(self, error: openai.APIStatusError) -> _Failure:
        status = error.status_code
        message = f"{status}: {terminal_text(str(error.message)[:300])}"  # the server's words, shown safely
        if status in (401, 403):
            raise AuthenticationStop(
                f"the server at {self.settings.base_url or 'api.openai.com'} refused the API key "
                f"({message}); set {self.settings.api_key_env} (or agent.api_key_env=NAME) to a valid key"
            )
        if _is_context_error(error):
            return _Failure(message, False, end="context_length")
        retry = status in RETRY_STATUSES or status >= 500
        return _Failure(message, retry, wait=_retry_after(error))


async def play_many(agent: LLMAgent, jobs: list[Any], start: Any, finish: Any) -> None:
    """Run ``start(job) -> Episode`` and ``agent.play`` for every job, ``concurrency`` at a time,
    calling ``finish(job, episode, outcome)`` as each one ends (in completion order)."""
    gate = asyncio.Semaphore(max(1, agent.settings.concurrency))

    async def one(job: Any) -> None:
        async with gate:
            episode = start(job)
            outcome = await agent.play(episode)
            finish(job, episode, outcome)

    await asyncio.gather(*(one(job) for job in jobs))
