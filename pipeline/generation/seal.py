"""One sealing step, the same for generation, import and verify: certify with CP-SAT, then
(when the certificate holds) measure and cross-check with the independent MILP."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gridbench_core.records import Certificate, CrossCheck, Measures
from gridbench_core.task import Answer, Task
from pipeline.generation.certify import certify
from pipeline.generation.measures import measure
from solvers.checker import task_memo
from solvers.cpsat import CpSatModel
from solvers.milp import crosscheck_answer
from solvers.results import SolverSettings


@dataclass(frozen=True)
class Sealed:
    """A task's certificate, measures and cross-check (None when not run) and their times."""

    certificate: Certificate
    measures: Measures | None = None
    crosscheck: CrossCheck | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def unknown(self) -> bool:
        """A proof hit the solver's time limit: never a pass."""
        return any("UNKNOWN" in failure for failure in self.certificate.failures)

    def answer(self, answer: Answer, certificate: Certificate | None = None) -> Answer:
        """``answer`` carrying these records (``certificate`` may add provenance)."""
        return Answer(
            answer.task_id,
            answer.truth,
            answer.roles,
            certificate or self.certificate,
            self.crosscheck,
            self.measures,
        )


def seal(
    task: Task,
    answer: Answer,
    solver: SolverSettings,
    node_limit: int | None = None,
    milp: str | None = None,
    model: CpSatModel | None = None,
    witnesses: Sequence[Mapping[tuple[int, int], str]] = (),
) -> Sealed:
    """Certify; then measure (``node_limit`` given; ``witnesses``: other completions that may
    settle the distance to ambiguity) and cross-check (``milp`` given: ``highs`` or ``cbc``) a
    task whose certificate holds. The task is read, never changed, so what every proof and
    measure derives from it alone is found once (:func:`solvers.checker.task_memo`)."""
    with task_memo():
        return _seal(task, answer, solver, node_limit, milp, model, witnesses)


def _seal(
    task: Task,
    answer: Answer,
    solver: SolverSettings,
    node_limit: int | None,
    milp: str | None,
    model: CpSatModel | None,
    witnesses: Sequence[Mapping[tuple[int, int], str]],
) -> Sealed:
    start = time.perf_counter()
    model = model or CpSatModel(task, solver, answer.truth_choice())
    certificate = certify(task, answer, solver, model)
    timings = {"certify_ms": (time.perf_counter() - start) * 1000.0}
    measures = check = None
    if certificate.ok and node_limit is not None:
        start = time.perf_counter()
        measures = measure(task, answer, solver, node_limit, model, witnesses)
        timings["measures_ms"] = (time.perf_counter() - start) * 1000.0
    if certificate.ok and milp:
        start = time.perf_counter()
        check = crosscheck_answer(task, answer, solver, milp)
        timings["crosscheck_ms"] = (time.perf_counter() - start) * 1000.0
    return Sealed(certificate, measures, check, timings)
