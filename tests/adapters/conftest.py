"""Set-up shared by the adapter tests."""

from __future__ import annotations

import contextlib

import pytest


@pytest.fixture(scope="session", autouse=True)
def _acp_imported_before_any_thread() -> None:
    """CPython 3.11 keeps the AST constructor's recursion depth in one state per interpreter,
    shared by every thread (CPython issue 106905): an ast.parse that races another thread's can
    fail with a spurious "AST constructor recursion depth mismatch". inspect_ai imports `acp`
    lazily, inside an evaluation that runs beside other threads, and pydantic parses that
    module's source (for its field docstrings) as it loads. Importing it here, in the main
    thread before the first adapter test of the worker runs, keeps that parse out of the race
    (one CI run failed the inspect case of test_parity.py on it); a worker that runs no adapter
    test no longer imports it at collection (half a second)."""
    with contextlib.suppress(ImportError):
        import acp  # noqa: F401
