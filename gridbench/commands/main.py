"""The ``gridbench`` command: ``gridbench <command> [key=value ...]`` from any folder.

Each command is one of the Hydra apps (``python -m gridbench.commands.<module>`` runs the same code);
``gridbench <command> --help`` prints that app's own help and configuration. Outputs go
below ``outputs/`` of the folder the command runs in (``gridbench_core.paths``).
"""

from __future__ import annotations

import errno
import gc
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A subcommand: the module that runs it and one line of help."""

    module: str
    summary: str
    argv_style: bool = False  # main(argv) -> exit code instead of a Hydra main()


COMMANDS: dict[str, Command] = {
    "release": Command(
        "gridbench.commands.release", "build a release (default: 5x7, six domains, 324 tasks)"
    ),
    "generate": Command(
        "gridbench.commands.generate", "generate and print tasks of one domain without a release"
    ),
    "verify": Command("gridbench.commands.verify", "re-prove a release: every digest, schema and task"),
    "audit": Command("gridbench.commands.audit", "integrity audit: rule-free policies and classifiers"),
    "eval": Command("gridbench.commands.evaluate", "run an agent (baseline or LLM) over a release"),
    "show": Command("gridbench.commands.show", "print one episode's transcript", argv_style=True),
    "report": Command("gridbench.commands.report", "tables, heatmaps and the validation figure of runs"),
    "view": Command("gridbench.commands.view", "the results explorer of runs: a static HTML folder"),
    "train": Command("gridbench.commands.train", "a large training set in Parquet shards"),
    "import": Command("gridbench.commands.import_agentce", "import reference (AgentCE) files into a release"),
    "hub": Command("gridbench.commands.hub", "publish a release to the Hugging Face Hub"),
    "mcp": Command("gridbench.mcp.server", "serve a release's episodes over MCP", argv_style=True),
}

USAGE = "usage: gridbench <command> [key=value ...]   (gridbench <command> --help for its options)"


def usage() -> str:
    """The help text: the commands, one line each."""
    width = max(map(len, COMMANDS))
    lines = [USAGE, "", "commands:"]
    lines += [f"  {name:{width}s}  {command.summary}" for name, command in COMMANDS.items()]
    lines += [
        "",
        "Every command reads its defaults from the packaged conf/; key=value overrides them",
        "(Hydra syntax). Outputs go below ./outputs/. Docs: docs/ in the source repository.",
    ]
    return "\n".join(lines)


def version() -> str:
    """The installed package's version."""
    from gridbench import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default ``sys.argv[1:]``) to a command; the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(f"gridbench {version()}")
        return 0
    name, rest = args[0], args[1:]
    command = COMMANDS.get(name)
    if command is None:
        close = [c for c in COMMANDS if c.startswith(name[:2])]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        print(f"error: unknown command {name[:40]!r}{hint}; `gridbench --help` lists them", file=sys.stderr)
        return 2
    from gridbench_core.paths import require_data

    require_data()
    module = importlib.import_module(command.module)
    entry: Callable[..., int | None] = module.main
    if command.argv_style:
        from gridbench_core.errors import interrupts_raise, raise_terminated

        interrupts_raise(raise_terminated)
        return int(entry(rest) or 0)
    sys.argv = [f"gridbench {name}", *rest]
    entry()
    return 0


def run() -> None:
    """The console script's entry point."""
    from gridbench_core.errors import (
        Terminated,
        UserError,
        drop_stdout,
        owns_process,
        quiet_until_running,
        say_stopped,
        stopped_line,
        terminal_text,
    )

    # Ctrl-C or SIGTERM while the command imports and composes its configuration: its one
    # line, not a traceback (the command's own handlers take over once it runs)
    quiet_until_running()
    owns_process()  # and how the process ends once a signal has stopped it

    try:
        code = main()
        if sys.stdout is not None:
            sys.stdout.flush()
        # the process ends here: what it holds is freed without the exit's last garbage
        # collection over all of it (0.2 s of a release's 300 MB; its files are closed)
        gc.freeze()
    except UserError as error:
        print(f"error: {terminal_text(error, 4000)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM outside a command's own handler
        sys.exit(say_stopped(*stopped_line(isinstance(stop, Terminated))))
    except BrokenPipeError:  # `gridbench verify --help | head`: a help page, a version
        drop_stdout()
        sys.stderr.close()
        sys.exit(0)
    except OSError as error:
        if error.errno not in UNWRITABLE:
            raise
        sys.exit(output_failed(error))
    sys.exit(code)


UNWRITABLE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def output_failed(error: OSError) -> int:
    """The standard output (help, a version, a command's lines) could not be written: a full
    disk, a quota, a file-size limit. One line on stderr, exit code 2; what is still buffered
    for the output is dropped, so that the exit adds no traceback."""
    from gridbench_core.errors import drop_stdout

    drop_stdout()
    where = error.filename or "the standard output"
    print(
        f"error: cannot write {where}: {error.strerror}; free some space (or send the output "
        "elsewhere) and run the command again",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    run()
