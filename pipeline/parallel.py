"""One way to fan work out, and one progress display for terminals and logs.

Two executors run :func:`parallel_imap`: ``local`` (the default) runs a process pool on this
machine -- workers leak no state from the parent (they are forked from a fresh fork server
that has imported the job's module, and take the parent's folder, ``sys.path`` and
environment of the moment the pool starts; one worker runs in-process), ignore Ctrl-C
(the parent alone handles it, stops the pool and says so in one line) and die with the
parent; ``ray`` (``executor=ray`` on a command) sends the jobs in batches to a Ray instance,
local or a cluster, retries a failed Ray task and then names its jobs. Both yield the same
results in the same order, so a command's output does not depend on where it ran.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from typing import Any, TypeVar

from tqdm import tqdm

from gridbench_core.errors import UserError, deferred_interrupts

Job = TypeVar("Job")
LOG_EVERY_S = 10.0
TASKS_PER_CPU = 4  # Ray tasks per CPU when ray.batch_size is 0: few enough to keep overhead small


class ExecutorError(UserError):
    """A job failed on the executor after its retries; the message names the jobs."""


@dataclass(frozen=True)
class Executor:
    """Where :func:`parallel_imap` runs: ``local`` or ``ray`` (with its address and batching)."""

    kind: str = "local"
    address: str = "local"
    num_cpus: int | None = None
    batch_size: int = 0
    max_retries: int = 2

    def validate(self) -> None:
        """Raise :class:`UserError` naming the first wrong setting."""
        if self.kind not in ("local", "ray"):
            raise UserError(f"executor={self.kind!r}: use local or ray")
        if self.batch_size < 0 or self.max_retries < 0 or (self.num_cpus is not None and self.num_cpus < 1):
            raise UserError("ray.batch_size and ray.max_retries must be >= 0, ray.num_cpus >= 1 or null")


_EXECUTOR = Executor()


@contextlib.contextmanager
def use_executor(executor: Executor) -> Iterator[None]:
    """Run :func:`parallel_imap` calls inside the block on ``executor``; a Ray instance this
    process started is shut down at the end."""
    global _EXECUTOR
    executor.validate()
    previous, _EXECUTOR = _EXECUTOR, executor
    started = False
    try:
        if executor.kind == "ray":
            started = _ray_init(executor)
        yield
    finally:
        _EXECUTOR = previous
        if started:
            import ray

            ray.shutdown()


def executor_of(cfg: Any) -> Executor:
    """The executor a command's config asks for (``executor`` and ``ray.*``; local if absent)."""
    kind = str(cfg.get("executor", "local")) if hasattr(cfg, "get") else "local"
    ray = cfg.get("ray") if kind == "ray" else None
    if ray is None:
        return Executor(kind)
    return Executor(
        kind,
        str(ray.address),
        None if ray.num_cpus is None else int(ray.num_cpus),
        int(ray.batch_size),
        int(ray.max_retries),
    )


def _ray_init(executor: Executor) -> bool:
    """Connect to (or start) Ray; True when this process started the instance."""
    try:
        import ray
    except ImportError:
        raise UserError(
            "executor=ray needs Ray: pip install 'gridbench[cluster]' (make install has it)"
        ) from None
    if ray.is_initialized():
        return False
    local = executor.address == "local"
    if not local and executor.address != "auto":
        _probe(executor.address)  # Ray itself would retry an unreachable address for minutes
    try:
        ray.init(
            address=None if local else executor.address,
            num_cpus=executor.num_cpus if local else None,
            include_dashboard=False,
            log_to_driver=True,
            logging_level=logging.WARNING,
            configure_logging=True,
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(
            f"ray.address={executor.address}: cannot reach Ray ({first[:200]}); start a cluster "
            "(`ray start --head`) or use ray.address=local"
        ) from None
    return True


def _probe(address: str) -> None:
    """Fail in seconds, with one line, when ``HOST:PORT`` (or ``ray://HOST:PORT``) does not answer."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError):
        raise UserError(
            f"ray.address={address}: nothing answers there; give the head node's HOST:PORT "
            "(`ray start --head` prints it), auto, or local"
        ) from None


WORKER_MEMORY = 256 * 1024 * 1024  # about what one worker process holds (its imports and a task)


def _available_memory() -> int | None:
    """Bytes of memory available to new processes (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def max_workers() -> int:
    """The most worker processes this machine can run: four per CPU, and no more than its
    available memory holds at about :data:`WORKER_MEMORY` each."""
    limit = 4 * (os.cpu_count() or 1)
    available = _available_memory()
    if available is not None:
        limit = min(limit, available // WORKER_MEMORY)
    return max(limit, 1)


def check_workers(value: Any, key: str) -> int:
    """A worker count a user gave, checked against this machine before any process is
    started (``verify.workers=100000`` would spawn a process per job); one line naming
    ``key`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{key}={str(value)[:40]!r} must be a whole number of worker processes")
    limit = max_workers()
    if not 1 <= value <= limit:
        raise UserError(
            f"{key}={value}: use 1..{limit} (this machine has {os.cpu_count() or 1} CPUs; "
            f"{limit} worker processes at most)"
        )
    return value


def _run_batch(function: Callable[[Any], Any], batch: list[Any]) -> list[Any]:
    return [function(job) for job in batch]


@contextlib.contextmanager
def long_job() -> Iterator[None]:
    """Around a job that builds much in memory (a training shard, its verification): what the
    process holds when it starts (the libraries, caches) lives through it, so it is left out of
    the collector's scans while the job runs, which otherwise went over all of it again and
    again (4% of a 10x10 shard's time). The job's garbage is collected when it ends, while
    what came before is still left out (a full collection scans the whole heap: in a process
    that holds much, such as a test session, it cost more than a small shard), and then the
    objects are handed back, so nothing that dies later is kept."""
    gc.freeze()
    try:
        yield
    finally:
        gc.collect()
        gc.unfreeze()


def _worker_setup(environment: dict[str, str]) -> None:
    """The parent's environment as it is when the pool starts (a worker forked from the fork
    server would otherwise have the server's, from the first pool; ``multiprocessing`` itself
    hands over the current folder and ``sys.path``); Ctrl-C is the parent's to handle; and a
    worker dies with its parent, even when the parent is killed outright (Linux
    ``PR_SET_PDEATHSIG``; the fork server ends when the parent does), so no worker is left
    behind."""
    if dict(os.environ) != environment:
        os.environ.clear()
        os.environ.update(environment)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's stop: no handler's line or delay
    # what the worker inherits (the fork server's modules) lives as long as it does: out of the
    # collector's scans, and its pages stay shared with the server (a scan writes to them)
    gc.freeze()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


class Progress:
    """A bar on a terminal; on a log file (not a TTY) a line every ``LOG_EVERY_S`` seconds and
    at the end, with the running success rate when the rows carry one (over the scored
    episodes: an ``api_error`` one is counted apart). With ``heartbeat`` a line (or a refresh
    of the bar) comes every ``LOG_EVERY_S`` seconds even when nothing finishes, with
    ``status()`` -- what is in flight -- when it is set."""

    def __init__(self, total: int, label: str, unit: str = "episode", heartbeat: bool = False) -> None:
        self.total, self.label, self.unit = total, label, unit
        self.done = self.successes = self.api_errors = 0
        self.status: Callable[[], str] | None = None
        self.start = self.last = time.perf_counter()
        self.bar = (
            tqdm(total=total, desc=label, unit=unit)
            if sys.stdout is not None and sys.stdout.isatty()
            else None
        )
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._beat: threading.Thread | None = None
        if heartbeat:
            self.start_heartbeat()

    def start_heartbeat(self) -> None:
        """Start the line (or bar refresh) every ``LOG_EVERY_S`` seconds, once ``status`` is set."""
        if self._beat is None and self.total:
            self._beat = threading.Thread(target=self._heartbeat, name="progress-heartbeat", daemon=True)
            self._beat.start()

    def update(self, row: dict[str, Any] | None = None) -> None:
        """Count one finished job (a success when ``row`` says so) and refresh the display."""
        self.done += 1
        if row and row.get("end_reason") == "api_error":
            self.api_errors += 1
        else:
            self.successes += bool(row and row.get("success"))
        if self.bar is not None:
            self.bar.update()
        elif time.perf_counter() - self.last >= LOG_EVERY_S:
            self._line()

    def _heartbeat(self) -> None:
        while not self._stop.wait(LOG_EVERY_S):
            if self.bar is not None:
                if self.status is not None:
                    self.bar.set_postfix_str(self._status(), refresh=True)
            elif time.perf_counter() - self.last >= LOG_EVERY_S * 0.95:
                self._line()

    def _status(self) -> str:
        try:
            return self.status() if self.status is not None else ""
        except Exception:  # a status is a courtesy: it never stops the run
            return ""

    def _line(self) -> None:
        with self._lock:
            self.last = time.perf_counter()
            elapsed = self.last - self.start
            rate = self.done / max(elapsed, 1e-9)
            parts = [
                f"{self.label}: {self.done}/{self.total} {self.unit}s",
                f"{rate:.2f}/s",
                f"{elapsed:.0f} s",
            ]
            if self.unit == "episode":
                scored = self.done - self.api_errors
                if scored:
                    parts.append(f"success {self.successes / scored:.3f}")
                if self.api_errors:
                    parts.append(f"{self.api_errors} api_error")
            status = self._status()
            if status:
                parts.append(status)
            print(", ".join(parts), flush=True)

    def close(self) -> None:
        """Stop the heartbeat; close the bar, or log the final line."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
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
    primed: bool = False,
) -> Generator[Any, None, None]:
    """Yield ``function(job)`` for every job (in order unless ``ordered`` is False), on the
    executor of the enclosing :func:`use_executor` (this machine's pool by default).
    ``primed``: first yield None, once every job is handed to the workers and before any
    result is waited for, so the caller can work while they run (closing the generator then
    stops them)."""
    progress = Progress(len(jobs), label, unit) if show else None
    try:
        if _EXECUTOR.kind == "ray" and jobs:
            yield from _ray_imap(function, jobs, ordered, progress, primed)
            return
        if workers <= 1 or len(jobs) <= 1:
            if jobs:
                _preload_here()
            if primed:
                yield None
            for job in jobs:
                yield function(job)
                if progress:
                    progress.update()
            return
        yield from _pool_imap(function, jobs, workers, ordered, progress, primed)
    finally:
        if progress:
            progress.close()


class _Shared:
    """The pool of the innermost :func:`shared_pool` block (None outside one) and its size."""

    pool: ProcessPoolExecutor | None = None
    workers = 0
    stop_registered = False  # the fork server is stopped when this process exits
    forked = False  # a pool of this process has asked the fork server for workers


@contextlib.contextmanager
def shared_pool(workers: int) -> Iterator[None]:
    """Inside the block, the local pool's ``workers`` processes are started once (when first
    needed) and serve every :func:`parallel_imap` call that asks for ``workers`` (a command
    that fans out twice, e.g. generating and then auditing, pays one start-up); they stop
    when the block ends. Calls that ask for another number get a pool of their own."""
    if _Shared.pool is not None or workers <= 1:
        yield
        return
    _Shared.workers = workers
    try:
        yield
    finally:
        pool, _Shared.pool, _Shared.workers = _Shared.pool, None, 0
        if pool is not None:
            pool.shutdown(wait=True)


# imported once by the fork server, before any worker is forked from it: what every job of
# the generator, the audit and verify loads (about a second of imports a worker would repeat)
PRELOAD = (
    "pipeline.forkserver_guard",  # first: the server dies with this process
    "numpy",
    "highspy",
    "ortools.sat.python.cp_model_helper",
    "pipeline.storage.cache",
    "pipeline.integrity.findings",
)


def _context() -> Any:
    """Fork-server workers where the platform has them (Linux, macOS): the server is a fresh
    interpreter (no state of the parent) that imports :data:`PRELOAD` and the job's module
    once, and each worker is a fork of it, so starting a worker costs milliseconds instead of
    a second of imports; elsewhere spawned workers."""
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    return get_context("forkserver")


# the extension modules of PRELOAD: a KeyboardInterrupt raised while one of them initialises
# leaves it half imported (numpy without ``asarray``) or turns into "ImportError:
# initialization failed" (OR-Tools), and the command ended with a traceback (a signal sweep over
# `gridbench generate` and `gridbench audit`, whose jobs run in the command's own process)
EXTENSIONS = ("numpy", "highspy", "ortools.sat.python.cp_model_helper")


def _preload_here() -> None:
    """Jobs run in this process: import what the fork server would have imported for the
    workers (its extension modules) with Ctrl-C and SIGTERM held until they are whole."""
    # no shortcut on ``sys.modules``: a module imported lazily (gridbench_core.lazy) is there
    # before it has run, and import_module runs it (an imported one costs a lookup)
    with deferred_interrupts():
        for name in EXTENSIONS:
            importlib.import_module(name)


def _stop_fork_server() -> None:
    """End the fork server with this process and wait for it (a few seconds at most), so that
    it never outlives the command and its CPU (its workers' too) counts as this process's
    children's (``time``). Ctrl-C or SIGTERM during that wait (the command's work is done)
    ends the server at once, without the "Exception ignored in atexit" traceback an exit
    handler's exception prints."""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    pid, alive = getattr(server, "_forkserver_pid", None), getattr(server, "_forkserver_alive_fd", None)
    if not pid or alive is None:
        return
    try:
        _end_server(pid, alive)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (gridbench_core.errors.Terminated)
        with contextlib.suppress(OSError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    server._forkserver_pid = server._forkserver_alive_fd = None


def _end_server(pid: int, alive: int) -> None:
    """Close the fork server's pipe and wait for it to end (a server no pool used is killed)."""
    with contextlib.suppress(OSError):
        os.close(alive)  # the server ends when no process holds this pipe open
    if not _Shared.forked:  # started early, never used (the command stopped first): no worker
        with contextlib.suppress(OSError):  # to wait for, and its imports are not waited out
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    with contextlib.suppress(ChildProcessError, OSError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:  # a worker still holds the pipe: end them all
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)


def _main_module() -> str:
    """The module this process runs as ``python -m <module>`` ("" for a script, or a package's
    ``__main__``). Every worker runs it again as ``__mp_main__`` before its first job; when the
    fork server has imported it, that costs no imports (``-m gridbench.commands.release``:
    0.15 s a worker of Hydra and the configuration)."""
    name = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None) or ""
    return "" if name.endswith("__main__") else name


def _prepare_fork_server(context: Any, module: str) -> None:
    """Name what the fork server imports (read once, when it starts: the first pool of this
    process, or :func:`warm`) and stop it when this process exits."""
    extra = [name for name in (module, _main_module()) if name]
    context.set_forkserver_preload([*PRELOAD, *extra])
    if not _Shared.stop_registered:
        atexit.register(_stop_fork_server)
        _Shared.stop_registered = True


def warm(workers: int, module: str) -> None:
    """Start the fork server of this machine's pool now, so that its imports (about half a
    second) run on another core while this process still imports and checks what it needs; the
    first pool of ``workers`` > 1 then forks from a server that is ready. ``module``: that of
    the first function the pool will run (as :func:`parallel_imap` would name it). Nothing
    when one worker (or another executor, or no fork server) is asked for."""
    if workers <= 1 or _EXECUTOR.kind != "local":
        return
    context = _context()
    if context.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    _prepare_fork_server(context, module)
    forkserver.ensure_running()


def _new_pool(workers: int, module: str = "") -> ProcessPoolExecutor:
    context = _context()
    if context.get_start_method() == "forkserver":
        _prepare_fork_server(context, module)
        _Shared.forked = True
    pool = ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_worker_setup,
        initargs=(dict(os.environ),),
    )
    # CPython 3.11: a pool broken while its queue's feeder thread is blocked writing jobs to
    # workers that are gone (Ctrl-C or SIGTERM mid-build, a killed worker) joins that thread for
    # ever, and the command hangs after its last line (an outside run, under load; 3.12 cancels
    # the join when the pool breaks). The join is cancelled from the start: the pool is only
    # left once every result was read or its work is dropped, so nothing it needs is lost.
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    return pool


def _pool_imap(
    function: Callable[[Job], Any],
    jobs: Sequence[Job],
    workers: int,
    ordered: bool,
    progress: Progress | None,
    primed: bool = False,
) -> Iterator[Any]:
    """The local pool: a worker that dies (killed, out of memory) is an error, never a hang
    (``multiprocessing.Pool`` would wait forever for its job)."""
    shared = workers == _Shared.workers
    if shared:
        if _Shared.pool is None:
            _Shared.pool = _new_pool(workers, function.__module__)
        pool = _Shared.pool
    else:
        pool = _new_pool(min(workers, len(jobs)), function.__module__)
    finished = False
    try:
        # Every job is handed out with Ctrl-C and SIGTERM held (delivered once the last one is,
        # then the workers are stopped below). A submit can start a worker, and that start
        # waits for the fork server to finish its imports (the first pool of a release, in
        # its first second): a KeyboardInterrupt raised in that wait left the server to fork
        # a worker the pool does not know, which took a job or the stop sentinel meant for a
        # known worker (a release hung after Ctrl-C at 0.76 s, its fork server and a worker
        # alive) or held the server's pipe open (the command's exit waited 5 s for it).
        with deferred_interrupts():
            futures = {pool.submit(function, job): job for job in jobs}
        if primed:
            yield None
        for future in futures if ordered else as_completed(futures):
            try:
                result = future.result()
            except BrokenProcessPool:
                raise
            except Exception as error:  # the job's own error: say which job it was
                error.add_note(f"(in the job {_key(futures[future])})")
                raise
            yield result
            if progress:
                progress.update()
        finished = True
    except BrokenProcessPool:
        raise ExecutorError(
            "a worker process died (killed, or out of memory); nothing was lost that a rerun "
            "cannot redo: run the command again, with fewer workers if memory is short"
        ) from None
    finally:
        if not finished:
            # An error or Ctrl-C: stop the workers now rather than when their jobs end. The
            # futures are not cancelled first, so that the pool marks them broken cleanly.
            _stop_workers(pool)
            if shared:  # the block's pool is gone with its workers
                _Shared.pool, _Shared.workers = None, 0
        manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it
        if not (shared and finished):
            pool.shutdown(wait=finished)
        if not finished:
            _manager_ended(manager)


def _manager_ended(manager: Any) -> None:
    """Wait (5 s at most) for the manager thread of a pool whose workers were stopped: it
    closes the pool's wake-up pipe as it ends, and CPython 3.11's exit wakes every pool's
    manager through that pipe without its lock, so a manager still closing it while the
    command exits printed "Exception ignored ... Bad file descriptor" and a traceback after
    the one line of a Ctrl-C or SIGTERM (one run in seven of a signal sweep over a release)."""
    if manager is not None and manager.is_alive():
        manager.join(timeout=5)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now, none of them halfway through sending a result: a worker
    killed between the header and the end of a message leaves the pool's manager thread
    waiting for the rest for ever, and the interpreter joins that thread at exit (the command
    would hang after its last line). The result queue's write lock is held while the workers
    die (a worker holds it while it sends; one killed holding it is waited for 5 s at most)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    lock: Any = getattr(getattr(pool, "_result_queue", None), "_wlock", None)
    # a broken pool's manager thread stops its workers itself, and reads no more
    held = lock is not None and not getattr(pool, "_broken", False) and lock.acquire(timeout=5)
    try:
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
    finally:
        if held:
            lock.release()


def _batches(jobs: Sequence[Job], cpus: int, batch_size: int) -> list[list[Job]]:
    size = batch_size or max(1, math.ceil(len(jobs) / (TASKS_PER_CPU * max(cpus, 1))))
    return [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]


def _ray_imap(
    function: Callable[[Job], Any],
    jobs: Sequence[Job],
    ordered: bool,
    progress: Progress | None,
    primed: bool = False,
) -> Iterator[Any]:
    import ray

    cpus = int(ray.cluster_resources().get("CPU", 1))
    batches = _batches(jobs, cpus, _EXECUTOR.batch_size)
    remote = ray.remote(max_retries=_EXECUTOR.max_retries, retry_exceptions=True)(_run_batch)
    pending = {remote.remote(function, batch): i for i, batch in enumerate(batches)}
    order = list(pending)
    try:
        if primed:
            yield None
        if ordered:
            for ref in order:
                yield from _results(ref, batches[pending[ref]], progress)
        else:
            waiting = list(order)
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                yield from _results(done[0], batches[pending[done[0]]], progress)
    finally:  # stopped early (an error, Ctrl-C): what is still running is cancelled
        unfinished = ray.wait(order, num_returns=len(order), timeout=0)[1]
        for ref in unfinished:
            ray.cancel(ref, force=True)


def _results(ref: Any, batch: list[Any], progress: Progress | None) -> Iterator[Any]:
    import ray

    try:
        results = ray.get(ref)
    except ray.exceptions.RayError as error:
        keys = ", ".join(_key(job) for job in batch[:5]) + (
            f" and {len(batch) - 5} more" if len(batch) > 5 else ""
        )
        cause = str(error).strip().splitlines()[-1][:300] if str(error).strip() else type(error).__name__
        raise ExecutorError(
            f"a Ray task failed after {_EXECUTOR.max_retries} retries; its jobs: {keys}; cause: {cause}"
        ) from None
    for result in results:
        yield result
        if progress:
            progress.update()


def _key(job: Any) -> str:
    """A job's key for an error message: its ``key`` or ``task_id`` when it has one; for a
    tuple (verify's jobs: root, then the file or shard), its second item."""
    for attribute in ("key", "task_id", "rel", "task_rel"):
        value = getattr(job, attribute, None)
        if value is not None:
            return str(value)[:120]
    if isinstance(job, tuple) and len(job) > 1 and isinstance(job[1], str):
        return job[1][:120]
    return repr(job)[:120]
