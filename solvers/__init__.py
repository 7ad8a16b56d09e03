"""Constraint semantics (the reference checker) and the solver back-ends (CP-SAT, CBC)."""

from solvers.checker import (
    PENDING,
    SATISFIED,
    VIOLATED,
    check_global,
    enumerate_completions,
    fill,
    is_valid_completion,
    locally_valid_candidates,
    passes_slot,
    rule_excess,
    rule_groups,
    rule_measure,
    rule_status,
    slot_violations,
)
from solvers.task import (
    RULE_KINDS,
    SCHEMA_VERSION,
    Answer,
    GlobalRule,
    Slot,
    SlotRoles,
    SlotRule,
    Task,
    TaskFormatError,
)
from solvers.task_io import answer_from_dict, task_from_dict

__all__ = [
    "PENDING", "RULE_KINDS", "SATISFIED", "SCHEMA_VERSION", "VIOLATED", "Answer", "GlobalRule",
    "Slot", "SlotRoles", "SlotRule", "Task", "TaskFormatError", "answer_from_dict",
    "check_global", "enumerate_completions", "fill", "is_valid_completion",
    "locally_valid_candidates", "passes_slot", "rule_excess", "rule_groups", "rule_measure",
    "rule_status", "slot_violations", "task_from_dict",
]  # fmt: skip
