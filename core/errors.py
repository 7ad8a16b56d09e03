"""The one error taxonomy: a :class:`UserError` is something the user can fix (a bad setting,
a damaged file, an unknown name) and becomes one ``error: ...`` line and exit code 2 at every
command; a :class:`SolverTimeout` means a solver answered UNKNOWN where a proof was needed.
Anything else is a bug and keeps its traceback. No imports: every layer may use it."""

from __future__ import annotations


class UserError(ValueError):
    """A mistake in a setting, a file or a name; the message names it and the fix."""


class SolverTimeout(RuntimeError):
    """A solver returned UNKNOWN (its time limit) where a proof was needed; never a pass."""
