"""The ground floor: the task and answer model, its JSON reading, the records of proofs and
measures, the rule vocabulary and the errors. It imports nothing of this project, and every
other package may import it (docs/architecture.md)."""

from core.errors import SolverTimeout, UserError
from core.records import Certificate, CrossCheck, Depth, Distance, Measures, Resistance
from core.task import (
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
from core.task_io import answer_from_dict, task_from_dict
from core.vocabulary import QueryOp, RuleKind, Scope, SlotOp

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
