"""The one error taxonomy: a :class:`UserError` is something the user can fix (a bad setting,
a damaged file, an unknown name) and becomes one ``error: ...`` line and exit code 2 at every
command; a :class:`SolverTimeout` means a solver answered UNKNOWN where a proof was needed.
Anything else is a bug and keeps its traceback. No imports: every layer may use it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


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


# how the one line (on stderr) of a command that a signal stops begins: Ctrl-C (exit 130) or
# SIGTERM (exit 143); what follows the semicolon says what is kept and what to do
INTERRUPTED_BY = "interrupted (Ctrl-C)"
TERMINATED_BY = "terminated (SIGTERM)"


def stopped_by(terminated: bool) -> str:
    """The beginning of the line of a command stopped by SIGTERM (``terminated``) or Ctrl-C."""
    return TERMINATED_BY if terminated else INTERRUPTED_BY


# what a command says when Ctrl-C stops it (exit 130), while it imports or while it works
INTERRUPTED = f"{INTERRUPTED_BY}; nothing half-written is kept, run the command again"


class deferred_interrupts:  # noqa: N801 (used as a context manager, like contextlib's)
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver them: for imports of
    extension modules (numpy, pyarrow, polars) in a command's own process. A KeyboardInterrupt
    raised inside such an import left a module half-initialised (the next use failed with
    "module 'numpy' has no attribute 'ndarray'" and a traceback), or was swallowed by the
    import machinery, so that a release went on to the end after Ctrl-C (an outside run).
    Only the main thread's handlers can be swapped; elsewhere the block runs as it is. A
    signal the process ignores (SIGINT under ``nohup`` or ``cmd &`` in a script) stays
    ignored: it was held and then "delivered" to SIG_IGN, and a SIGTERM held after it was
    dropped (a release ran on to its end, exit 0, in 2 runs of 40 of a signal sweep whose
    runs had SIGINT ignored). Every signal held is delivered, in the order they came, until
    one raises."""

    def __enter__(self) -> deferred_interrupts:
        import signal
        import threading

        self.pending: list[int] = []
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(number) is not signal.SIG_IGN:
                    self.previous[number] = signal.signal(number, self._hold)
        return self

    def _hold(self, number: int, frame: object) -> None:
        self.pending.append(number)

    def __exit__(self, *exc: object) -> None:
        import signal

        for number, handler in self.previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        # now, with the command's own handlers: the first that raises ends the loop
        for number in dict.fromkeys(self.pending):
            signal.raise_signal(number)


TERMINATED = f"{TERMINATED_BY}; nothing half-written is kept, run the command again"


class _Result:
    """How the command of this process ends: what it has written completely (``None``:
    nothing yet) and, once a signal stopped it, the line it says and its exit code."""

    written: str | None = None
    command = False  # this process is a command's own (owns_process)
    line = ""
    code: int | None = None  # a line is said: a further signal ends the process with this code
    saying = False  # being written: a signal now waits for the end of the write
    said = False
    pending = False


def written(what: str) -> None:
    """The command's result is complete at its final place (``what`` names it: "the release
    at PATH"): a Ctrl-C or SIGTERM from now on stops nothing the user needs, and the line it
    prints says so (:func:`stopped_line`). Called once the release's folder is renamed into
    place (or a training set's manifest), with signals held across the rename."""
    _Result.written = what


def stopped_line(terminated: bool) -> tuple[str, int]:
    """The one line (stderr) and the exit code of a command stopped by Ctrl-C, or by SIGTERM
    (``terminated``): 130 or 143, nothing half-written kept. Once its result is written
    (:func:`written`), exit code 0 and a line naming it as complete: a late Ctrl-C (the release
    renamed into place, the summary not printed yet) said "interrupted ... run the command
    again" with exit 130, and the rerun then refused, as the release existed."""
    if _Result.written is not None:
        line = (
            f"{stopped_by(terminated)} after {terminal_text(_Result.written, 400)} was written completely; "
            "it is kept as it is, nothing to run again"
        )
        return line, 0
    return (TERMINATED, 143) if terminated else (INTERRUPTED, 130)


def say_stopped(line: str, code: int) -> int:
    """Print ``line`` on stderr, the one line of a command that a signal stopped, and return
    ``code``, its exit code. In a command's own process (:func:`owns_process`), from just
    before the line on, a further Ctrl-C or SIGTERM ends the process at once with the same
    code (the line said once; its fork server, semaphores and temporary folder gone:
    :func:`end_pool_helpers`), and the interpreter's teardown ignores them
    (:func:`_exit_handlers_done`). Before, SIGINT then SIGTERM during the exit said
    "interrupted" and ended with SIGTERM's code: SIGTERM raised where the exit was (a second
    line, "terminated", exit 143), or killed the teardown, where Python gives every signal
    back to its default (exit -15: 13 runs in 60 of a signal sweep). A library call
    (``run_evaluation`` in a program) prints the line and sets no handler."""
    import signal
    import threading

    armed = _Result.command and threading.current_thread() is threading.main_thread()
    if armed:
        _Result.line, _Result.code = line, code
        _Result.saying = _Result.said = _Result.pending = False
        for number in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(number) is not signal.SIG_IGN:
                signal.signal(number, _end_as_said)
    _Result.saying = True  # a signal during the write is held: the line is said once, whole
    _write_stderr(line)
    _Result.said, _Result.saying = True, False
    if armed and _Result.pending:
        _end_as_said(signal.SIGTERM, None)
    return code


def _end_as_said(number: int, frame: object) -> None:
    """A signal once a stopped command says its line (or is about to): the process ends now,
    with the exit code of that line (said first, if it is not yet). A third signal, should
    this be stuck, kills it."""
    import os
    import signal
    import sys

    if _Result.saying:  # the line is being written: it ends once it is (say_stopped)
        _Result.pending = True
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not _Result.said:
        _write_stderr(_Result.line)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except Exception:  # noqa: BLE001 (a closed or full output, a write it interrupted: dropped)
        pass
    end_pool_helpers()
    os._exit(_Result.code if _Result.code is not None else 130)


def _write_stderr(line: str) -> None:
    import sys

    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # no stderr, or a closed one: the code says it
        pass


def _exit_handlers_done() -> None:
    """The last exit handler of a command's process (registered as it starts, before those of
    the modules it imports: the pools', multiprocessing's, its fork server's stop): the exit
    code is decided and every clean-up has run, so Ctrl-C and SIGTERM are ignored for the
    interpreter's teardown, where Python resets its handlers to the default and a signal
    killed the process (exit -15 after the line "interrupted", or after a complete release).
    A teardown takes milliseconds to a fraction of a second."""
    import signal

    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(number, signal.SIG_IGN)
        except (OSError, ValueError):  # not the main thread
            pass


def end_pool_helpers() -> None:
    """What the exit of a process that ends at once (``os._exit``, a second SIGTERM) would
    have done for multiprocessing: its fork server is killed (its workers die with it) and its
    temporary folder (``pymp-*`` in TMPDIR, which holds the server's ``listener-*`` socket) is
    removed, and its pools' semaphores released (:func:`_release_semaphores`).
    multiprocessing removes that folder only in its exit handler, so an interrupted `gridbench
    release` left one behind (53 runs of 100 of a signal sweep, Ctrl-C at 0.6-0.9 s: the fork
    server is started before the command's handlers are set), and so did a second SIGTERM (35
    of 40). Only what this process started; nothing when it never used multiprocessing (no
    module is imported here: this runs in a signal handler)."""
    import os
    import signal
    import sys

    server = getattr(sys.modules.get("multiprocessing.forkserver"), "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if isinstance(pid, int) and pid > 0:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _release_semaphores()
    process = sys.modules.get("multiprocessing.process")
    shutil = sys.modules.get("shutil")
    if process is None or shutil is None:  # (tempfile, which made the folder, imports shutil)
        return
    try:
        folder = process.current_process()._config.get("tempdir")
    except AttributeError:
        return
    if isinstance(folder, str) and os.path.basename(folder).startswith("pymp-"):
        shutil.rmtree(folder, ignore_errors=True)


def _release_semaphores() -> None:
    """The named semaphores of this process's pools (their queues' locks) unlinked and taken
    off multiprocessing's resource tracker, as multiprocessing's exit does (SemLock's
    finalizers), but without its locks (this runs in a signal handler, maybe while the
    interrupted code holds one): the tracker, left with them, printed "There appear to be 5
    leaked semaphore objects to clean up at shutdown" and a warning line after the command's
    line (6 runs in 40 of a sweep of two SIGTERMs)."""
    import os
    import sys

    util = sys.modules.get("multiprocessing.util")
    semlock = getattr(sys.modules.get("multiprocessing.synchronize"), "SemLock", None)
    cleanup = getattr(semlock, "_cleanup", None)
    unlink = getattr(sys.modules.get("_multiprocessing"), "sem_unlink", None)
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    pipe = getattr(tracker, "_fd", None)
    if util is None or cleanup is None:
        return
    try:
        finalizers = list(util._finalizer_registry.values())
    except (AttributeError, RuntimeError):
        return
    for finalizer in finalizers:
        arguments = getattr(finalizer, "_args", None) or ()
        if getattr(finalizer, "_callback", None) is not cleanup or not arguments:
            continue
        name = arguments[0]
        if not isinstance(name, str):
            continue
        try:
            if unlink is not None:
                unlink(name)
            if isinstance(pipe, int):  # one write of less than PIPE_BUF: whole, as the tracker reads it
                os.write(pipe, f"UNREGISTER:{name}:semaphore\n".encode("ascii"))
        except (OSError, ValueError, UnicodeError):
            pass


def _end_now(number: int, frame: object) -> None:
    import os
    import signal

    _write_stderr(INTERRUPTED if number == signal.SIGINT else TERMINATED)
    end_pool_helpers()
    os._exit(130 if number == signal.SIGINT else 143)


def owns_process() -> None:
    """This process is the command's own (the console script, or ``python -m
    gridbench.commands.<module>``), not that of a program calling it: once a signal has
    stopped the command and its line is said, a further one ends the process with the same
    exit code (:func:`say_stopped`), and its last exit handler makes the interpreter's
    teardown ignore them (:func:`_exit_handlers_done`). Registered as the command starts,
    so that it runs after the exit handlers of the modules the command imports."""
    import atexit

    if not _Result.command:
        atexit.register(_exit_handlers_done)
    _Result.command = True


def quiet_until_running() -> None:
    """Ctrl-C or SIGTERM before a command runs (while it imports, parses and composes its
    configuration: nothing is written yet) prints the command's one line and ends the
    process at once, until :func:`interrupts_raise`. A KeyboardInterrupt raised there gave
    a traceback from whichever import it hit, or a garbled configuration error with exit
    code 1 when it landed inside OmegaConf, and SIGTERM killed the process without a word
    (a signal sweep over the first 0.4 s of `gridbench release`). A signal its parent set
    to be ignored stays ignored."""
    import signal

    _Result.written, _Result.code = None, None  # a command starts: nothing written, nothing said
    _Result.saying = _Result.said = _Result.pending = False
    for number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(number) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(number, _end_now)


def interrupts_raise(on_term: Callable[[int, Any], None]) -> None:
    """The command runs: Ctrl-C raises KeyboardInterrupt again and SIGTERM calls ``on_term``
    (which raises :class:`Terminated`), so that its own handlers stop its workers and remove
    what is half-written. A signal set to be ignored stays ignored."""
    import signal

    if signal.getsignal(signal.SIGINT) is _end_now:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, on_term)


def raise_terminated(number: int, frame: object) -> None:
    """SIGTERM's handler while a command runs: :class:`Terminated` where the command is (a
    second SIGTERM ends the process at once, :func:`_end_at_once`)."""
    import signal

    signal.signal(signal.SIGTERM, _end_at_once)
    raise Terminated()


def _end_at_once(number: int, frame: object) -> None:
    """A second SIGTERM before the first one's line: the process says that line and ends now
    (exit 143, or 0 once its result is written), without waiting for the cleanup the first
    one started, but with its fork server, semaphores and temporary folder gone (it was killed
    outright: the ``pymp-*`` folder stayed, and the exit code was -15). A third SIGTERM,
    should this handler itself be stuck, kills it."""
    import os
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    line, code = stopped_line(True)  # the first SIGTERM's line was not said yet (or it would be
    _write_stderr(line)  # _end_as_said's turn): this one says it
    end_pool_helpers()
    os._exit(code)
