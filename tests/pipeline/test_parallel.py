"""The local pool: results in order, and a worker that dies is an error, never a hang."""

from __future__ import annotations

import os
import signal

import pytest

from pipeline.parallel import ExecutorError, parallel_imap


def square(n: int) -> int:
    return n * n


def dies_on_three(n: int) -> int:
    if n == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
    return n


def test_results_come_back_in_order_or_all_unordered():
    jobs = list(range(30))
    assert list(parallel_imap(square, jobs, 2, "", show=False)) == [n * n for n in jobs]
    assert sorted(parallel_imap(square, jobs, 2, "", ordered=False, show=False)) == [n * n for n in jobs]


@pytest.mark.parametrize("ordered", [True, False])
def test_a_killed_worker_is_an_error_not_a_hang(ordered):
    with pytest.raises(ExecutorError, match="a worker process died"):
        list(parallel_imap(dies_on_three, list(range(12)), 2, "", ordered=ordered, show=False))
