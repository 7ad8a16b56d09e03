"""Small typed records that solver calls return. UNKNOWN is never a proof."""

from __future__ import annotations

from dataclasses import dataclass

from gridbench_core.errors import SolverTimeout

__all__ = ["FEASIBLE", "INFEASIBLE", "UNKNOWN", "SolveResult", "SolverSettings", "SolverTimeout"]

Cell = tuple[int, int]

FEASIBLE, INFEASIBLE, UNKNOWN = "FEASIBLE", "INFEASIBLE", "UNKNOWN"


@dataclass(frozen=True)
class SolverSettings:
    """Limits for one solver call. One worker and a fixed seed keep output deterministic."""

    time_limit_s: float = 10.0
    workers: int = 1
    seed: int = 0
    presolve: bool = True  # off is faster on average but has a heavy tail (measured)
    # CP-SAT's linearization_level: 0 (no LP relaxation) proves these tasks 2-3x faster than
    # its default 1, and up to 10x on caged rings of sums (measured: bench/bench_generate.py)
    linearization: int = 0
    # CP-SAT's deterministic time (a work count, about a second of this machine's time per
    # unit): with one worker a solve stops at the same point on every machine, so a draft that
    # times out times out everywhere and generation stays byte-for-byte reproducible
    deterministic_limit: float | None = None


# Solves stop after ``limit`` units of CP-SAT's deterministic time (the same on every machine:
# a draft that times out is re-drawn everywhere, and verify proves what generation proved, so
# neither depends on the machine's speed or load); the wall clock stops them only on a machine
# this many times slower (or this loaded: at 3x, the 15x15 and 20x20 presets failed draws on a
# 2-core machine at a load of 6, and verify failed a measure's solve the build had made)
WALL_BACKSTOP = 10.0
# a solve that times out is asked again, once, with this many times every limit (generation:
# the same draft; verify: the same task), never taken as a proof either way
RETRY_FACTOR = 4


def deterministic_settings(limit: float, workers: int = 1) -> SolverSettings:
    """Settings whose CP-SAT solves stop at ``limit`` units of deterministic time, with a wall
    clock backstop of :data:`WALL_BACKSTOP` times that (the MILP back-ends, which have no
    deterministic time, get the backstop as their limit)."""
    return SolverSettings(
        time_limit_s=WALL_BACKSTOP * limit, workers=workers, seed=0, deterministic_limit=limit
    )


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one solve: FEASIBLE (a solution exists), INFEASIBLE (proved), UNKNOWN."""

    status: str
    wall_ms: float
    solution: dict[Cell, str] | None = None
    objective: int | None = None
