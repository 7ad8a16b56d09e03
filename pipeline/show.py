"""`python -m pipeline.show run=RUN_DIR task=TASK_ID [failure_rate=0.1] [trial=0]` (make show):
print one episode's transcript readably (``pipeline/evaluation/show.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.evaluation.show import show

USAGE = 'usage: make show ARGS="run=outputs/runs/<release>/<run> task=<task_id> [failure_rate=R] [trial=T]"'


def main(argv: list[str]) -> int:
    """Print the transcript of the episode that ``argv``'s ``key=value`` options name; the exit code."""
    options = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if "run" not in options or "task" not in options:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        rate = float(options["failure_rate"]) if "failure_rate" in options else None
        trial = int(options["trial"]) if "trial" in options else None
        print(show(Path(options["run"]), options["task"], rate, trial))
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
