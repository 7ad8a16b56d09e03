"""The runner's HTTP edges that an outside interop run found (round 7): the encodings it asks
for are the ones it decodes, and every form of a server's requested wait is read and capped."""

from __future__ import annotations

import email.utils
import time
from types import SimpleNamespace

import anyio
import httpx2
import pytest

from gridbench.agents.llm.runner import MAX_RETRY_AFTER_S, CappedTransport, _retry_after


def test_the_runner_asks_only_for_the_encodings_it_decodes():
    """httpx asks for br (and zstd) when their packages are installed; a server that honoured
    that failed every episode ("content-encoding 'br' is not supported")."""
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("accept-encoding", ""))
        return httpx2.Response(200, json={"ok": True})

    transport = CappedTransport(1_000_000, 1)
    transport.inner = httpx2.MockTransport(handler)

    async def main() -> None:
        async with httpx2.AsyncClient(
            transport=transport, headers={"Accept-Encoding": "gzip, deflate, br"}
        ) as client:
            assert (await client.get("http://loopback.invalid/v1/models")).json() == {"ok": True}

    anyio.run(main)
    assert seen == ["gzip, deflate"]


def _error(**headers: str) -> SimpleNamespace:
    return SimpleNamespace(response=SimpleNamespace(headers=httpx2.Headers(headers)))


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "120"}, MAX_RETRY_AFTER_S),  # capped, not dropped for the 0.5 s backoff
        ({"retry-after-ms": "3000"}, 3.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the finer one first
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_a_requested_wait_is_read_in_every_form_and_capped(headers, wait):
    assert _retry_after(_error(**headers)) == wait


def test_a_retry_after_date_is_the_seconds_until_it():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27.0 <= _retry_after(_error(**{"retry-after": when})) <= 30.0
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert _retry_after(_error(**{"retry-after": past})) == 0.0
    assert _retry_after(SimpleNamespace()) is None  # a connection error has no response
