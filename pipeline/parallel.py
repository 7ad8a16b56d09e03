"""One way to fan work out over processes, and one progress display for terminals and logs.

Workers are spawned (no state leaks from the parent; one worker runs in-process) and ignore
Ctrl-C: the parent alone handles it, stops the pool and says so in one line.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing import get_context
from typing import Any, TypeVar

from tqdm import tqdm

Job = TypeVar("Job")
LOG_EVERY_S = 10.0


def _worker_setup() -> None:
    """Ctrl-C is the parent's to handle; and a worker dies with its parent, even when the
    parent is killed outright (Linux ``PR_SET_PDEATHSIG``), so no worker is left behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


class Progress:
    """A bar on a terminal; on a log file (not a TTY) a line every ``LOG_EVERY_S`` seconds and
    at the end, with the running success rate when the rows carry one."""

    def __init__(self, total: int, label: str, unit: str = "episode") -> None:
        self.total, self.label, self.unit = total, label, unit
        self.done = self.successes = 0
        self.start = self.last = time.perf_counter()
        self.bar = tqdm(total=total, desc=label, unit=unit) if sys.stdout.isatty() else None

    def update(self, row: dict[str, Any] | None = None) -> None:
        """Count one finished job (a success when ``row`` says so) and refresh the display."""
        self.done += 1
        self.successes += bool(row and row.get("success"))
        if self.bar is not None:
            self.bar.update()
        elif time.perf_counter() - self.last >= LOG_EVERY_S:
            self._line()

    def _line(self) -> None:
        self.last = time.perf_counter()
        rate = self.done / max(self.last - self.start, 1e-9)
        success = f", success {self.successes / max(self.done, 1):.3f}" if self.unit == "episode" else ""
        print(f"{self.label}: {self.done}/{self.total} {self.unit}s, {rate:.2f}/s{success}", flush=True)

    def close(self) -> None:
        """Close the bar, or log the final line."""
        if self.bar is not None:
            self.bar.close()
        elif self.total:
            self._line()


def parallel_imap(
    function: Callable[[Job], Any],
    jobs: Sequence[Job],
    workers: int,
    label: str,
    unit: str = "task",
    ordered: bool = True,
    show: bool = True,
) -> Iterator[Any]:
    """Yield ``function(job)`` for every job (in order unless ``ordered`` is False)."""
    progress = Progress(len(jobs), label, unit) if show else None
    try:
        if workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                yield function(job)
                if progress:
                    progress.update()
            return
        with get_context("spawn").Pool(min(workers, len(jobs)), initializer=_worker_setup) as pool:
            mapper = pool.imap if ordered else pool.imap_unordered
            for result in mapper(function, jobs, chunksize=2):
                yield result
                if progress:
                    progress.update()
    finally:
        if progress:
            progress.close()
