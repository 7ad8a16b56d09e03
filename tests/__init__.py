"""The tests mirror the packages: tests/solvers, tests/pipeline/{generation,storage,evaluation},
tests/gridbench/env, tests/gridbench. Shared helpers live here."""

import ast
import gc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` with the garbage collector held. On CPython 3.11 a finalizer that runs
    Python code while the tree is built (an earlier test's abandoned asyncio task logging its
    exception, freed by a collection the parse's allocations trigger) breaks the AST
    constructor's recursion count: ``SystemError: AST constructor recursion depth mismatch``
    (python/cpython#106905), a failure of whichever test parses next. The garbage waits for
    the next collection after the parse (collecting here would cost a full collection of a
    worker's heap per file parsed)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=filename)
    finally:
        if enabled:
            gc.enable()
