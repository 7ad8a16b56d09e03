"""`python -m gridbench.commands.show run=RUN_DIR task=TASK_ID [failure_rate=0.1] [trial=0]` (make show):
print one episode's transcript readably (``pipeline/evaluation/transcripts.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pipeline.evaluation.transcripts import show
from pipeline.storage.read import shown

USAGE = (
    "usage: gridbench show run=outputs/runs/<release>/<run> task=<task_id> [failure_rate=R] [trial=T]"
    ' (or make show ARGS="...")'
)


def main(argv: list[str]) -> int:
    """Print the transcript of the episode that ``argv``'s ``key=value`` options name; the exit code."""
    if any(arg in ("-h", "--help", "help") for arg in argv):
        print(f"{USAGE}\n\n{__doc__}")
        return 0
    options = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    unknown = sorted(set(options) - {"run", "task", "failure_rate", "trial"}) + [
        a for a in argv if "=" not in a
    ]
    if "run" not in options or "task" not in options or unknown:
        extra = f"error: unknown options {[shown(u, 40) for u in unknown[:3]]}; " if unknown else ""
        print(f"{extra}{USAGE}", file=sys.stderr)
        return 2
    try:
        rate = _number(options, "failure_rate", float)
        trial = _number(options, "trial", int)
        print(show(Path(options["run"]), options["task"], rate, trial))
    except BrokenPipeError:  # the reader stopped early (`| head`): as every command
        from gridbench_core.errors import PIPE_CLOSED, drop_stdout

        drop_stdout()
        return PIPE_CLOSED
    except (ValueError, OSError) as error:
        print(f"error: {shown(error, 400)}", file=sys.stderr)
        return 2
    return 0


def _number(options: dict[str, str], key: str, kind: type) -> Any:
    """``options[key]`` as a number of ``kind`` (None when absent); a ValueError naming the key."""
    if key not in options:
        return None
    try:
        value = kind(options[key])
    except ValueError:
        raise ValueError(
            f"{key}={shown(options[key], 40)} must be a {'whole ' if kind is int else ''}number"
        ) from None
    if value != value or value < 0:  # NaN, or negative: no episode has it
        raise ValueError(f"{key}={shown(options[key], 40)} must be a number >= 0")
    return value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
