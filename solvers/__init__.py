"""Constraint semantics (the reference checker), interval propagation and the reasoning ladder,
and the solver back-ends (CP-SAT; the MILP cross-check on HiGHS or CBC)."""

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

__all__ = [
    "PENDING",
    "SATISFIED",
    "VIOLATED",
    "check_global",
    "enumerate_completions",
    "fill",
    "is_valid_completion",
    "locally_valid_candidates",
    "passes_slot",
    "rule_excess",
    "rule_groups",
    "rule_measure",
    "rule_status",
    "slot_violations",
]
