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


def where_am_i(name: str) -> tuple[str, str | None, bool]:
    import sys

    return os.getcwd(), os.environ.get(name), "/gridbench-test-path" in sys.path


def test_each_pool_sees_the_parent_as_it_is_when_the_pool_starts(tmp_path, monkeypatch):
    """Workers are forked from one long-lived fork server, yet each pool's workers run in the
    parent's current folder, with its environment and sys.path of that moment (a test that
    changes them, or a command run from another folder, is not served by stale workers)."""
    list(parallel_imap(square, [1, 2, 3], 2, "", show=False))  # the server exists already
    for n in range(2):
        folder = tmp_path / f"f{n}"
        folder.mkdir()
        monkeypatch.chdir(folder)
        monkeypatch.setenv("GRIDBENCH_POOL_PROBE", f"v{n}")
        monkeypatch.syspath_prepend("/gridbench-test-path")
        seen = list(parallel_imap(where_am_i, ["GRIDBENCH_POOL_PROBE"] * 4, 2, "", show=False))
        assert set(seen) == {(str(folder), f"v{n}", True)}
    monkeypatch.delenv("GRIDBENCH_POOL_PROBE")
    seen = list(parallel_imap(where_am_i, ["GRIDBENCH_POOL_PROBE"] * 4, 2, "", show=False))
    assert {value for _, value, _ in seen} == {None}
