"""The natural-language task policy, written from the rules (never the answer). Every global
rule is listed under its name, the identifier the global check reports it by; a name that is
not a plain identifier is refused (it could read as an instruction to the agent)."""

from __future__ import annotations

from domains import Domain
from gridbench_core.task import RULE_NAME, RULE_NAME_TEXT, GlobalRule, SlotRule, Task, TaskFormatError
from gridbench_core.vocabulary import RuleKind

_SCOPE = {"grid": "in the whole grid", "row": "in each {row}", "col": "in each {col}"}


def _words(name: str) -> str:
    return name.replace("_", " ")


def _cells(cells: tuple[tuple[int, int], ...]) -> str:
    listed = [f"({row}, {col})" for row, col in cells]
    return listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]


def describe_rule(rule: GlobalRule, domain: Domain) -> str:
    """``rule`` as an English clause in ``domain``'s nouns."""
    if rule.scope == "cells":
        scope = f"in cells {_cells(rule.cells or ())}"
    else:
        scope = _SCOPE[rule.scope].format(row=domain.row_noun, col=domain.col_noun)
    attribute, plural = _words(rule.attribute), domain.item_plural
    if rule.kind == RuleKind.SUM_MAX:
        return f"the total {attribute} of all {plural} {scope} must be at most {rule.bound}"
    if rule.kind == RuleKind.SUM_MIN:
        return f"the total {attribute} of all {plural} {scope} must be at least {rule.bound}"
    if rule.kind == RuleKind.REPEAT_MAX:
        return f"the same {attribute} can appear at most {rule.bound} times {scope}"
    if rule.kind == RuleKind.COUNT_MIN:
        return f"at least {rule.bound} {plural} {scope} must have {attribute} {rule.equals}"
    if rule.kind == RuleKind.COUNT_MAX:
        return f"at most {rule.bound} {plural} {scope} may have {attribute} {rule.equals}"
    return f"at least {rule.bound} {plural} {scope} must have {attribute} of at least {rule.at_least}"


def describe_slot_rule(rule: SlotRule) -> str:
    """A slot rule as an English phrase, e.g. ``price at most 20``."""
    words = {"<=": "at most", ">=": "at least", "in": "one of", "not_in": "none of"}[rule.op]
    value = ", ".join(rule.value) if isinstance(rule.value, tuple) else rule.value
    return f"{_words(rule.attribute)} {words} {value}"


def write_instruction(
    domain: Domain,
    rows: int,
    cols: int,
    rules: list[GlobalRule],
    slot_rules: dict[tuple[int, int], list[SlotRule]],
) -> str:
    """The task's instruction in English: the grid, every global rule and each hidden cell's slot rules."""
    lines = [
        f"You are solving a {domain.task_phrase} task. Fill the {rows}x{cols} grid with "
        f"{domain.item_noun} ids.",
        f"Rows are {domain.row_noun}s and columns are {domain.col_noun}s (0-based).",
        "Only the empty (null) cells need to be filled; every other cell is fixed.",
        "Each empty cell must take exactly one of its candidate ids, and that "
        f"{domain.item_noun} must meet the cell's own slot constraints.",
        "Across the grid, the plan must satisfy these global constraints (the global check "
        "reports each by its name):",
    ]
    for rule in rules:
        if not RULE_NAME.fullmatch(rule.name):
            raise TaskFormatError(f"global rule name {rule.name[:40]!r} is not {RULE_NAME_TEXT}")
    lines += [f"({n}) {rule.name}: {describe_rule(rule, domain)}." for n, rule in enumerate(rules, 1)]
    lines.append("Each empty cell has its own slot constraints:")
    for (row, col), cell_rules in sorted(slot_rules.items()):
        text = "; ".join(describe_slot_rule(rule) for rule in cell_rules)
        lines.append(f"- the {domain.item_noun} in cell ({row}, {col}): {text}.")
    lines.append("Exactly one completion satisfies every constraint.")
    return "\n".join(lines)


def rendered_instruction(task: Task) -> str:
    """The instruction ``task``'s rules render to (what its ``instruction`` must be); a
    :class:`domains.DomainError` for a domain this code does not know."""
    from domains import get_domain

    return write_instruction(
        get_domain(task.domain),
        task.rows,
        task.cols,
        list(task.global_constraints),
        {(s.row, s.col): list(s.constraints) for s in task.slots},
    )
