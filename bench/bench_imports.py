"""Import and start-up times: ``import gridbench``, reaching ``gridbench.load_release``
(the reader, polars and Arrow), loading a release, and the command's ``--help``; each the
median of fresh processes. Prints numbers, never fails on speed.

    .venv/bin/python bench/bench_imports.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "outputs" / "releases" / "gridbench-v2.0.0"


def timed(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {out.stderr[-500:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    python = sys.executable
    script = Path(python).parent / "gridbench"
    cases = {
        "python -c pass (the interpreter alone)": [python, "-c", "pass"],
        "import gridbench": [python, "-c", "import gridbench"],
        "gridbench.load_release (name reached)": [python, "-c", "import gridbench; gridbench.load_release"],
    }
    if RELEASE.is_dir():
        code = f"import gridbench; len(gridbench.load_release({str(RELEASE)!r}))"
        cases["gridbench.load_release(default release)"] = [python, "-c", code]
    if script.exists():
        cases["gridbench --help"] = [str(script), "--help"]
        cases["gridbench release --help"] = [str(script), "release", "--help"]
    cases["python -m gridbench.commands.release --help"] = [
        python,
        "-m",
        "gridbench.commands.release",
        "--help",
    ]
    print(f"{'what':45s} {'median s':>9s}   ({args.repeat} fresh processes each)")
    for name, command in cases.items():
        print(f"{name:45s} {timed(command, args.repeat):9.3f}")


if __name__ == "__main__":
    main()
