"""The record a generated task travels in (no solver import: writing a release needs none)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gridbench_core.task import Answer, Task
from pipeline.generation.keys import TaskKey


@dataclass(frozen=True)
class CertifiedTask:
    """A task, its answer (with certificate and measures), build events and volatile timings.

    Timings stay out of the answer file so that files are byte-identical across runs.
    """

    key: TaskKey
    task: Task
    answer: Answer
    timings: dict[str, float] = field(default_factory=dict)
    events: tuple[dict[str, Any], ...] = ()
