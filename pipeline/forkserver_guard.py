"""Imported by the local pool's fork server only (:data:`pipeline.parallel.PRELOAD`): the server
dies with the process that started it, even one killed outright (Linux ``PR_SET_PDEATHSIG``).

Each worker is forked from the server and dies with it in turn (its own ``PR_SET_PDEATHSIG``,
set by :func:`pipeline.parallel._worker_setup`). Without this the server would outlive a killed
command, and so would its workers: each holds the pipe whose closing ends the server."""

from __future__ import annotations

import signal
import sys
import warnings

# Ctrl-C is the command's to handle (it stops its pool and says one line). The server ignores
# it once its imports are done (multiprocessing.forkserver.main); a Ctrl-C during those imports
# (the first half second of every pool: verify hands its proofs out first) printed the
# server's KeyboardInterrupt traceback after the command's line. Its workers, forked from it,
# ignore it from their first instant too (their setup says so again).
signal.signal(signal.SIGINT, signal.SIG_IGN)

if sys.platform.startswith("linux"):
    try:
        import ctypes
        import os

        _libc = ctypes.CDLL("libc.so.6", use_errno=True)
        _libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        _SERVER = os.getpid()
        _forking: list[int] = []

        def _before_fork() -> None:
            _forking[:] = [_SERVER] if os.getpid() == _SERVER else []

        def _worker_dies_with_the_server() -> None:
            """In a worker, at once after the server forked it: a worker set this up only in
            its initializer, after unpickling its start; a server ended before that (its command
            killed, or stopped by a second signal, while the pool started) left a worker that
            never died with it, holding the command's stdout and stderr open and running its
            job (a test of two SIGTERMs then waited for its 30 s jobs)."""
            if not _forking:
                return
            _libc.prctl(1, signal.SIGTERM)
            if os.getppid() != _forking[0]:  # the server ended between the fork and now
                os._exit(0)

        os.register_at_fork(before=_before_fork, after_in_child=_worker_dies_with_the_server)
    except OSError:
        pass

# The server imports the module its command runs with ``python -m`` (pipeline.parallel: so that
# no worker imports it again); each worker still runs that module as ``__mp_main__``, and
# runpy warns that it "found it in sys.modules" once per worker. That import was on purpose and
# the run is the one multiprocessing always makes, so the workers (forked from here) do not warn.
warnings.filterwarnings(
    "ignore", message=r".*found in sys\.modules after import of package", category=RuntimeWarning
)

# A worker forked while its command stops (Ctrl-C in a pool's first second) finds the
# semaphores the command shared with it already removed, and its start fails: the server's
# child then prints that traceback after the command's one line. Such a worker exits quietly;
# any other error is shown as before.
_shown = sys.excepthook
_GONE = (FileNotFoundError, EOFError, ConnectionError)


def _starting(trace: object) -> bool:
    """Whether ``trace`` passes through multiprocessing's start of a child (spawn._main)."""
    while trace is not None:
        code = trace.tb_frame.f_code  # type: ignore[attr-defined]
        if code.co_name == "_main" and code.co_filename.replace("\\", "/").endswith(
            "multiprocessing/spawn.py"
        ):
            return True
        trace = trace.tb_next  # type: ignore[attr-defined]
    return False


def quiet_when_orphaned(kind: type[BaseException], value: BaseException, trace: object) -> None:
    """``sys.excepthook`` of the server and its children (see above)."""
    if isinstance(value, _GONE) and _starting(trace):
        return
    _shown(kind, value, trace)  # type: ignore[arg-type]


sys.excepthook = quiet_when_orphaned
