"""The one vocabulary of rules: rule kinds, slot operators, scopes and query operators, each
defined once. The domains, the checker, both solver models, the JSON Schemas (a test ties them)
and the tool schemas take their values from here. Members are strings, so files and messages
read as before. No imports: every layer may use it."""

from __future__ import annotations

from enum import StrEnum


class RuleKind(StrEnum):
    """What a global rule bounds (docs/spec.md, section 7 "Releases", "Task and answer files")."""

    SUM_MAX = "sum_max"
    SUM_MIN = "sum_min"
    REPEAT_MAX = "repeat_max"
    COUNT_MIN = "count_min"
    COUNT_MAX = "count_max"
    COUNT_MIN_THRESHOLD = "count_min_threshold"


UPPER_BOUND_KINDS = frozenset({RuleKind.SUM_MAX, RuleKind.REPEAT_MAX, RuleKind.COUNT_MAX})
SUM_KINDS = (RuleKind.SUM_MAX, RuleKind.SUM_MIN)
COUNT_KINDS = (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX)  # with ``equals``
NUMERIC_KINDS = (*SUM_KINDS, RuleKind.COUNT_MIN_THRESHOLD)  # on a numeric attribute


class SlotOp(StrEnum):
    """A slot rule's comparison; the domains draw the numeric ones."""

    LE = "<="
    GE = ">="
    IN = "in"
    NOT_IN = "not_in"


NUMERIC_SLOT_OPS = (SlotOp.LE, SlotOp.GE)


class Scope(StrEnum):
    """Where a global rule holds: the whole grid, each row / column separately, or the cells
    the rule lists (a region; task format 2)."""

    GRID = "grid"
    ROW = "row"
    COL = "col"
    CELLS = "cells"


class QueryOp(StrEnum):
    """An operator of the attribute query tool."""

    GT = ">"
    GE = ">="
    EQ = "="
    LT = "<"
    LE = "<="
    IN = "in"
    NOT_IN = "not_in"


NUMERIC_QUERY_OPS = (QueryOp.GT, QueryOp.GE, QueryOp.EQ, QueryOp.LT, QueryOp.LE)
CATEGORY_QUERY_OPS = (QueryOp.EQ, QueryOp.IN, QueryOp.NOT_IN)
