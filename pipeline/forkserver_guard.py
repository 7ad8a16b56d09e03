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
