"""The shared test helpers hold where the interpreter is fragile."""

from __future__ import annotations

import asyncio
import gc
import logging

from tests import ROOT, parse_source


def _abandoned_task() -> None:
    """An asyncio task whose exception nobody retrieved, left in a cycle: freed by a later
    collection, whose finalizer logs (what a harness test interrupted by Ctrl-C leaves)."""

    async def interrupted() -> None:
        raise KeyboardInterrupt

    loop = asyncio.new_event_loop()
    task = loop.create_task(interrupted())
    try:
        loop.run_until_complete(task)
    except KeyboardInterrupt:
        pass
    loop.close()
    cycle: list[object] = [task]
    cycle.append(cycle)


def test_parsing_survives_garbage_whose_finalizer_runs_python(caplog):
    source = (ROOT / "solvers" / "cpsat.py").read_text()
    threshold = gc.get_threshold()
    gc.set_threshold(50)  # a collection inside every parse (CPython 3.11.7: 190 of 200 failed)
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):  # the finalizer logs, as it did
            for _ in range(30):
                _abandoned_task()
                assert parse_source(source).body
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
