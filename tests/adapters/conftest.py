"""Set-up shared by the adapter tests."""

from __future__ import annotations

import contextlib

# CPython 3.11 keeps the AST constructor's recursion depth in one state per interpreter, shared
# by every thread (CPython issue 106905): an ast.parse that races another thread's can fail with
# a spurious "AST constructor recursion depth mismatch". inspect_ai imports `acp` lazily, inside
# an evaluation that runs beside other threads, and pydantic parses that module's source (for its
# field docstrings) as it loads. Importing it here, at collection, keeps that parse out of the
# race (one CI run failed the inspect case of test_parity.py on it).
with contextlib.suppress(ImportError):
    import acp  # noqa: F401
