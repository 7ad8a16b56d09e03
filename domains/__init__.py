"""Planning domains. Built-ins are imported explicitly so that they register once."""

from domains import course, meal, pc_build, shopping, toy, travel, workforce  # noqa: F401
from domains.base import (
    GLOBAL_KINDS,
    SCOPES,
    SLOT_OPS,
    CategoricalAttribute,
    Domain,
    DomainError,
    GlobalRuleTemplate,
    NumericAttribute,
    SlotRuleTemplate,
)
from domains.registry import domain_names, get_domain, register

PAPER_DOMAINS = ("course", "meal", "pc_build", "shopping", "travel", "workforce")

__all__ = [
    "GLOBAL_KINDS",
    "PAPER_DOMAINS",
    "SCOPES",
    "SLOT_OPS",
    "CategoricalAttribute",
    "Domain",
    "DomainError",
    "GlobalRuleTemplate",
    "NumericAttribute",
    "SlotRuleTemplate",
    "domain_names",
    "get_domain",
    "register",
]
