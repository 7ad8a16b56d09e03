"""How a release is re-proved (:class:`VerifySettings`), apart from the verifier itself, so
that reading a command's settings loads none of the verifier's libraries (polars, pyarrow,
jsonschema)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solvers.results import SolverSettings


@dataclass(frozen=True)
class VerifySettings:
    """How a release is re-proved: each solver call's limits, the MILP cross-check (``highs``
    or ``cbc``; None: CP-SAT alone) and the worker processes. No defaults: the command's are
    ``conf/apps/verify.yaml`` (``pipeline.config.verify_settings`` converts them)."""

    solver: SolverSettings
    milp: str | None
    workers: int
    # the structured config a build's recorded config must fit (pipeline.config's ``Config``,
    # given from above: the storage floor does not import the command's configuration)
    build_schema: Any = None
