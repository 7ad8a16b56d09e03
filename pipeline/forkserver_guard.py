"""Imported by the local pool's fork server only (:data:`pipeline.parallel.PRELOAD`): the server
dies with the process that started it, even one killed outright (Linux ``PR_SET_PDEATHSIG``).

Each worker is forked from the server and dies with it in turn (its own ``PR_SET_PDEATHSIG``,
set by :func:`pipeline.parallel._worker_setup`). Without this the server would outlive a killed
command, and so would its workers: each holds the pipe whose closing ends the server."""

from __future__ import annotations

import signal
import sys

if sys.platform.startswith("linux"):
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass

# The server imports the module its command runs with ``python -m`` (pipeline.parallel: so that
# no worker imports it again); each worker still runs that module as ``__mp_main__``, and
# runpy warns that it "found it in sys.modules" once per worker. That import was on purpose and
# the run is the one multiprocessing always makes, so the workers (forked from here) do not warn.
import warnings  # noqa: E402

warnings.filterwarnings(
    "ignore", message=r".*found in sys\.modules after import of package", category=RuntimeWarning
)
