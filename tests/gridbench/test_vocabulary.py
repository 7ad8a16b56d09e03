"""The one vocabulary: the JSON Schemas, the checker, the domains and the tool schemas all
take rule kinds, slot operators, scopes and query operators from gridbench_core.vocabulary."""

from __future__ import annotations

import json

from domains import GLOBAL_KINDS, SCOPES, domain_names, get_domain
from gridbench.env import openai_schemas
from gridbench_core.paths import SCHEMA_DIR
from gridbench_core.task import RULE_KINDS, SLOT_OPS, GlobalRule
from gridbench_core.vocabulary import UPPER_BOUND_KINDS, QueryOp, RuleKind, Scope, SlotOp


def test_the_task_schema_enums_are_the_code_enums():
    schema = json.loads((SCHEMA_DIR / "task.schema.json").read_text())
    definitions = schema["$defs"]
    assert definitions["global_constraint"]["properties"]["kind"]["enum"] == [k.value for k in RuleKind]
    assert definitions["global_constraint"]["properties"]["scope"]["enum"] == [s.value for s in Scope]
    assert definitions["slot_constraint"]["properties"]["op"]["enum"] == [o.value for o in SlotOp]
    assert tuple(RuleKind) == RULE_KINDS == GLOBAL_KINDS
    assert tuple(Scope)[:-1] == SCOPES and Scope.CELLS not in SCOPES  # a domain never names cells
    assert tuple(SlotOp) == SLOT_OPS


def test_upper_bounds_are_what_the_rules_say():
    for kind in RuleKind:
        rule = GlobalRule("r", kind, "a", 1)
        assert rule.is_upper_bound == (kind in UPPER_BOUND_KINDS) == kind.endswith("_max")


def test_tool_schemas_list_the_fields_and_operators_they_accept():
    for name in domain_names():
        schemas = {
            s["function"]["name"]: s["function"]["parameters"]["properties"] for s in openai_schemas(name)
        }
        query = schemas[f"query_{name}_candidate_from_attribute"]
        fields = sorted(a.name for a in get_domain(name).attributes)
        assert query["field"]["enum"] == fields
        assert query["operator"]["enum"] == [o.value for o in QueryOp]
        assert schemas[f"get_{name}_item_attributes"]["field"]["enum"] == fields
