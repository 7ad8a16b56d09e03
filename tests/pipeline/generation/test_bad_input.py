"""Bad input: a clear error naming the parameter and the limit, raised before any work."""

from __future__ import annotations

import pytest

from domains import Domain, DomainError, GlobalRuleTemplate, NumericAttribute, SlotRuleTemplate
from domains.registry import register
from gridbench_core.task import GlobalRule, TaskFormatError
from gridbench_core.task_io import task_from_dict
from pipeline.generation import GenerationError, GenerationSettings, TaskKey, generate_task


def key(**changes) -> TaskKey:
    base = dict(domain="course", rows=5, cols=7, hidden_slots=7, decoy_budget=8, candidates_per_slot=25)
    base.update(changes)
    return TaskKey(**base)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        (dict(hidden_slots=36), ["hidden_slots=36", "35 cells"]),
        (dict(hidden_slots=0), ["hidden_slots=0"]),
        (dict(candidates_per_slot=1), ["candidates_per_slot=1", ">= 2"]),
        (dict(domain="chess"), ["unknown domain 'chess'", "course"]),
        (dict(decoy_budget=-1), ["decoy_budget=-1"]),
        (dict(hidden_slots=1, decoy_budget=30), ["decoy_budget=30", "limit 24"]),
        (dict(hidden_slots=2, decoy_budget=9, candidates_per_slot=5), ["decoy_budget=9", "limit 8"]),
        (dict(rows=0), ["rows and cols"]),
    ],
)
def test_bad_keys_are_named(changes, words, monkeypatch):
    calls = []
    monkeypatch.setattr("pipeline.generation.build.sample_grid", lambda *a: calls.append(a))
    with pytest.raises(GenerationError) as error:
        generate_task(key(**changes))
    for word in words:
        assert word in str(error.value)
    assert calls == [], "validation must run before any work"


def test_bad_settings_are_named():
    with pytest.raises(GenerationError, match="allocation='wide'"):
        generate_task(key(), GenerationSettings(allocation="wide"))
    with pytest.raises(GenerationError, match="min_margin=0"):
        generate_task(key(), GenerationSettings(min_margin=0))


def test_unknown_rule_kind_in_a_task_file():
    with pytest.raises(TaskFormatError, match="kind 'sum_avg' is unknown"):
        GlobalRule.from_dict({"name": "x", "kind": "sum_avg", "attribute": "a", "bound": 1})


def test_unknown_schema_version_and_missing_field():
    with pytest.raises(TaskFormatError, match="schema_version '9'"):
        task_from_dict({"schema_version": "9", "task_id": "t"})
    with pytest.raises(TaskFormatError, match="missing field 'rows'"):
        task_from_dict({"schema_version": "1", "task_id": "t"})


def _domain(name: str, kind: str = "sum_max") -> Domain:
    return Domain(
        name=name,
        item_noun="x",
        item_plural="xs",
        id_prefix="X",
        task_phrase="x",
        row_noun="r",
        col_noun="c",
        attributes=(NumericAttribute("a", 0, 9),),
        slot_rules=(SlotRuleTemplate("max_a", "a", "<="),),
        global_rules=(GlobalRuleTemplate("g", kind, "a"),),
        name_words=("X",),
    )


def test_registry_rejects_duplicates_and_unknown_rule_kinds():
    with pytest.raises(DomainError, match="already registered"):
        register(lambda: _domain("course"))
    with pytest.raises(DomainError, match="unknown rule kind 'sum_avg'"):
        register(lambda: _domain("new_domain", kind="sum_avg"))


def test_a_domain_with_an_empty_range_or_a_threshold_rule_without_its_threshold_is_refused():
    """A numeric attribute needs low < high (one value is no attribute to bound); a
    ``count_min_threshold`` rule needs ``at_least`` (what it counts)."""
    import dataclasses

    one_value = dataclasses.replace(_domain("new_domain"), attributes=(NumericAttribute("a", 3, 3),))
    with pytest.raises(DomainError, match=r"need 0 <= low < high, got \[3, 3\]"):
        one_value.validate()
    no_threshold = _domain("new_domain", kind="count_min_threshold")
    with pytest.raises(DomainError, match="count_min_threshold needs at_least"):
        no_threshold.validate()
    dataclasses.replace(
        no_threshold, global_rules=(GlobalRuleTemplate("g", "count_min_threshold", "a", at_least=5),)
    ).validate()
