"""The ground floor: the task and answer model, its JSON reading, the records of proofs and
measures, the rule vocabulary and the errors. It imports nothing of this project, and every
other package may import it (docs/architecture.md)."""

from gridbench_core.errors import SolverTimeout, UserError
from gridbench_core.records import Certificate, CrossCheck, Depth, Distance, Measures, Resistance
from gridbench_core.task import (
    RULE_KINDS,
    SCHEMA_VERSION,
    TASK_SCHEMA_VERSIONS,
    Answer,
    GlobalRule,
    Slot,
    SlotRoles,
    SlotRule,
    Task,
    TaskFormatError,
)
from gridbench_core.task_io import answer_from_dict, task_from_dict
from gridbench_core.vocabulary import QueryOp, RuleKind, Scope, SlotOp

__all__ = [
    "RULE_KINDS",
    "SCHEMA_VERSION",
    "TASK_SCHEMA_VERSIONS",
    "Answer",
    "Certificate",
    "CrossCheck",
    "Depth",
    "Distance",
    "GlobalRule",
    "Measures",
    "QueryOp",
    "Resistance",
    "RuleKind",
    "Scope",
    "Slot",
    "SlotOp",
    "SlotRoles",
    "SlotRule",
    "SolverTimeout",
    "Task",
    "TaskFormatError",
    "UserError",
    "answer_from_dict",
    "task_from_dict",
]
