"""One way to build a command: ``@command(config_name)`` turns a body ``(cfg) -> exit code``
into a Hydra entry point with the same behaviour everywhere:

- the command line is composed once before Hydra runs, so that a misspelt key, an unknown
  option or a value of the wrong type is one ``error: ...`` line and exit code 2, like every
  other user error (:class:`core.errors.UserError`, solver time-outs included);
- Ctrl-C prints one line and exits 130; a worker pool is stopped with it;
- anything else is a bug: it keeps its traceback and exits 1.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from core.errors import SolverTimeout, UserError
from core.paths import CONF_DIR as CONF

USER_ERRORS: tuple[type[BaseException], ...] = (UserError, FileNotFoundError, SolverTimeout)


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` as one ``error:`` line on stderr and exit with ``code``."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def _first_line(error: BaseException) -> str:
    cause = error.__cause__ or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    head = lines[0] if lines else type(cause).__name__
    where = next((line for line in lines[1:] if line.startswith("full_key:")), "")
    return f"{head} ({where})" if where and where.split(":", 1)[1].strip() not in head else head


def precheck(folder: str, name: str, argv: list[str]) -> None:
    """Compose the command line's overrides once, outside Hydra, so that Hydra's own errors
    become one line and exit 2. Multirun sweeps and Hydra's flags are left to Hydra."""
    if any(arg in ("-m", "--multirun") or arg.startswith("--") for arg in argv):
        return
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pipeline.config import register_configs

    register_configs()
    overrides = [arg for arg in argv if not arg.startswith("-")]
    try:
        with initialize_config_dir(config_dir=str(CONF / folder), version_base=None):
            compose(config_name=name, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as error:
        fail(
            f"{_first_line(error)}; see `gridbench <command> --help` (or conf/) for the keys and their values"
        )


def command(
    config_name: str, folder: str = "apps"
) -> Callable[[Callable[[DictConfig], int | None]], Callable[[], None]]:
    """Make ``body`` a command over ``conf/<folder>/<config_name>.yaml``."""

    def decorate(body: Callable[[DictConfig], int | None]) -> Callable[[], None]:
        path = str(CONF / "apps") if folder == "apps" else str(CONF)

        @hydra.main(version_base=None, config_path=path, config_name=config_name)
        def task(cfg: DictConfig) -> None:
            run_cli(body, cfg)

        def main() -> None:
            try:
                precheck(folder if folder == "apps" else "", config_name, sys.argv[1:])
                task()
            except KeyboardInterrupt:
                print(
                    "interrupted (Ctrl-C); nothing half-written is kept, run the command again",
                    file=sys.stderr,
                )
                sys.exit(130)

        main.__doc__ = body.__doc__
        return main

    return decorate


def run_cli(body: Callable[[DictConfig], int | None], cfg: DictConfig) -> None:
    """Run ``body``; a user error becomes one line on stderr and exit code 2."""
    from pipeline.parallel import executor_of, use_executor

    try:
        with use_executor(executor_of(cfg)):
            code = body(cfg)
    except USER_ERRORS as error:
        hint = "; raise solver.time_limit_s" if isinstance(error, SolverTimeout) else ""
        fail(f"{error}{hint}")
    except OSError as error:
        message = os_error_line(error)
        if message is None:
            raise
        fail(message)
    if code:
        sys.exit(code)


NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
NOT_ALLOWED = (errno.EACCES, errno.EPERM, errno.EROFS)


def os_error_line(error: OSError) -> str | None:
    """The one line of an operating-system error that the user can fix (a full disk, a
    quota, a file-size limit, a folder that may not be written), or None for anything else.
    Writers leave nothing half-written behind them (temporary files and folders are removed,
    a run's row is the commit), so the command can simply be run again."""
    where = f" ({error.filename})" if error.filename else ""
    if error.errno in NO_SPACE:
        return (
            f"no space left to write{where}: {error.strerror}; free some space (or raise the "
            "quota) and run the command again: nothing half-written was kept"
        )
    if error.errno in NOT_ALLOWED:
        return f"not allowed to write{where}: {error.strerror}; choose a folder you can write"
    return None


# Where a command ran, not what it made: left out of what a release records.
WHERE = ("hydra", "executor", "ray")


def plain(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` resolved into a plain dict, without the ``hydra`` node and the executor
    (a release built on Ray is byte-identical to one built on the local pool)."""
    container = OmegaConf.to_container(cfg, resolve=True)
    if not isinstance(container, dict):
        raise UserError("configuration must be a mapping")
    return {str(k): v for k, v in container.items() if k not in WHERE}
