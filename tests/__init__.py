"""The tests mirror the packages: tests/solvers, tests/pipeline/{generation,storage,evaluation},
tests/gridbench/env, tests/gridbench. Shared helpers live here."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
