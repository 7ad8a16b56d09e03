"""One way to fan work out over processes with a progress bar (spawned workers, so no state
leaks from the parent; one worker runs in-process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from multiprocessing import get_context
from typing import Any, TypeVar

from tqdm import tqdm

Job = TypeVar("Job")


def parallel_imap(function: Callable[[Job], Any], jobs: Sequence[Job], workers: int, label: str,
                  unit: str = "task", ordered: bool = True) -> Iterator[Any]:  # fmt: skip
    """Yield ``function(job)`` for every job (in order unless ``ordered`` is False)."""
    with tqdm(total=len(jobs), desc=label, unit=unit, disable=None) as bar:
        if workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                yield function(job)
                bar.update()
            return
        with get_context("spawn").Pool(min(workers, len(jobs))) as pool:
            mapper = pool.imap if ordered else pool.imap_unordered
            for result in mapper(function, jobs, chunksize=2):
                yield result
                bar.update()
