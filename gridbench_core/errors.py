"""The one error taxonomy: a :class:`UserError` is something the user can fix (a bad setting,
a damaged file, an unknown name) and becomes one ``error: ...`` line and exit code 2 at every
command; a :class:`SolverTimeout` means a solver answered UNKNOWN where a proof was needed.
Anything else is a bug and keeps its traceback. No imports: every layer may use it."""

from __future__ import annotations


class UserError(ValueError):
    """A mistake in a setting, a file or a name; the message names it and the fix."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where a command is so that it ends as Ctrl-C does (exit 143, not 130)."""


class SolverTimeout(RuntimeError):
    """A solver returned UNKNOWN (its time limit) where a proof was needed; never a pass."""


def terminal_text(value: object, limit: int = 2000) -> str:
    """``value`` as one line that a terminal, a log or a figure shows as written: control
    characters (escape sequences, line breaks), direction overrides and other invisible
    characters escaped as ``\\x1b``, ``\\u202e``, ...; cut at ``limit`` characters. Every
    string from outside (a server's message, a name in a results table, a configuration
    value) goes through it before it is printed."""
    text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


# What a shell reports for a process ended by SIGPIPE: the reader of a command's output stopped
# early (`gridbench verify ... | head -1`); the rest of the output is dropped, the verdict not given
PIPE_CLOSED = 141


def drop_stdout() -> None:
    """Point the standard output at /dev/null: what is still buffered for a reader that has
    gone (``| head``) or for a full disk is dropped, so the exit adds no "Exception ignored"
    line and no exit code 120. Nothing when there is no standard output at all."""
    import os
    import sys

    if sys.stdout is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


# what a command says when Ctrl-C stops it (exit 130), while it imports or while it works
INTERRUPTED = "interrupted (Ctrl-C); nothing half-written is kept, run the command again"


class deferred_interrupts:  # noqa: N801 (used as a context manager, like contextlib's)
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver them: for imports of
    extension modules (numpy, pyarrow, polars) in a command's own process. A KeyboardInterrupt
    raised inside such an import left a module half-initialised (the next use failed with
    "module 'numpy' has no attribute 'ndarray'" and a traceback), or was swallowed by the
    import machinery, so that a release went on to the end after Ctrl-C (an outside run).
    Only the main thread's handlers can be swapped; elsewhere the block runs as it is."""

    def __enter__(self) -> deferred_interrupts:
        import signal
        import threading

        self.pending: list[int] = []
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self.previous[number] = signal.signal(number, self._hold)
        return self

    def _hold(self, number: int, frame: object) -> None:
        self.pending.append(number)

    def __exit__(self, *exc: object) -> None:
        import signal

        for number, handler in self.previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        if self.pending:  # now, with the command's own handler: its exception, or the default
            signal.raise_signal(self.pending[0])
