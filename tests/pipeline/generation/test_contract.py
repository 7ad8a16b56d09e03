"""Contract over every registered domain: a generated task is certified and reproducible."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from domains import domain_names
from gridbench_core.task_io import answer_from_dict, task_from_dict
from pipeline.generation import GenerationSettings, TaskKey, generate_task
from solvers.checker import is_valid_completion, passes_slot, slot_violations
from solvers.milp import crosscheck
from tests.brute import completions


def small_key(domain: str, **overrides) -> TaskKey:
    if domain == "toy":
        base = dict(rows=3, cols=3, hidden_slots=4, decoy_budget=4, candidates_per_slot=5)
    else:
        base = dict(rows=5, cols=7, hidden_slots=7, decoy_budget=8, candidates_per_slot=25)
    base.update(overrides)
    return TaskKey(domain=domain, seed=7, **base)


@pytest.fixture(scope="module", params=domain_names())
def generated(request):
    return generate_task(small_key(request.param))


def test_truth_passes_and_certificate_is_ok(generated):
    task, answer = generated.task, generated.answer
    truth = answer.truth_choice()
    assert is_valid_completion(task, truth)
    assert answer.certificate.ok is True
    assert answer.certificate.truth_feasible == "FEASIBLE"
    assert answer.certificate.uniqueness == "INFEASIBLE"
    assert sum(len(role.decoys) for role in answer.roles) == task.decoy_budget


def test_decoys_and_filtered_fail_as_they_should(generated):
    task, answer = generated.task, generated.answer
    slots = {(s.row, s.col): s for s in task.slots}
    for role in answer.roles:
        slot = slots[(role.row, role.col)]
        assert len(slot.candidates) == task.candidates_per_slot
        assert set(slot.candidates) == {role.truth, *role.decoys, *role.filtered}
        for decoy in role.decoys:
            assert passes_slot(slot, task.items[decoy])
            fixed = {**answer.truth_choice(), (role.row, role.col): decoy}
            assert not is_valid_completion(task, fixed)
        for item_id in role.filtered:
            assert slot_violations(slot.constraints, task.items[item_id])


def test_every_item_is_drawn_from_the_natural_ranges(generated):
    from domains import CategoricalAttribute, get_domain

    domain = get_domain(generated.task.domain)
    for item in generated.task.items.values():
        for attribute in domain.attributes:
            value = item[attribute.name]
            if isinstance(attribute, CategoricalAttribute):
                assert value in attribute.values
            else:
                assert attribute.low <= value <= attribute.high, (attribute, value)


def test_cbc_confirms_independently(generated):
    task, answer = generated.task, generated.answer
    decoys = {(r.row, r.col): list(r.decoys) for r in answer.roles}
    record = crosscheck(task, answer.truth_choice(), decoys)
    assert record.ok, record


def test_files_round_trip(generated):
    task_dict, answer_dict = generated.task.to_dict(), generated.answer.to_dict()
    assert task_from_dict(json.loads(json.dumps(task_dict))).to_dict() == task_dict
    assert answer_from_dict(json.loads(json.dumps(answer_dict))).to_dict() == answer_dict
    assert "truth" not in json.dumps(task_dict).lower().replace("truthful", "")


def test_toy_uniqueness_matches_brute_force():
    for seed in range(5):
        key = TaskKey("toy", 3, 3, 4, 6, 5, seed=seed)
        task, answer = generate_task(key).task, generate_task(key).answer
        assert completions(task) == [answer.truth_choice()]


def _bytes(key: TaskKey) -> str:
    made = generate_task(key)
    return json.dumps([made.task.to_dict(), made.answer.to_dict()], sort_keys=True)


def test_same_key_same_bytes_across_processes_and_hash_seeds():
    key = small_key("course")
    here = _bytes(key)
    assert here == _bytes(key)
    code = (
        "import sys; from tests.pipeline.generation.test_contract import _bytes, small_key; "
        "sys.stdout.write(_bytes(small_key('course')))"
    )
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert out == here


def test_different_index_gives_a_different_task():
    first = generate_task(small_key("toy"))
    second = generate_task(TaskKey(**{**small_key("toy").__dict__, "index": 1}))
    assert first.task.task_id != second.task.task_id
    assert first.task.to_dict()["items"] != second.task.to_dict()["items"]


def test_min_margin_is_enforced_and_recorded():
    settings = GenerationSettings(min_margin=3)
    made = generate_task(TaskKey("course", 5, 7, 7, 8, 25, seed=3), settings)
    distance = made.answer.measures.distance_to_ambiguity
    assert distance.units is None or distance.units >= 3


def test_a_solver_disagreement_is_recorded_settled_and_redrawn(monkeypatch, tmp_path):
    """A MILP verdict that contradicts CP-SAT never crashes the build and never ships: the
    enumeration settles it, the event is kept with both solvers' names and versions, the task
    is re-drawn, and the manifest counts the event."""
    import pipeline.generation.build as build
    import pipeline.generation.seal as seal
    from pipeline.storage.write import write_release

    real = seal.crosscheck_answer
    calls = []

    def lying_once(task, answer, solver, milp="highs"):
        record = real(task, answer, solver, milp)
        calls.append(task.task_id)
        if len(calls) == 1:
            record = dataclasses.replace(
                record, ok=False, unique=False, statuses={**record.statuses, "other": "FEASIBLE"}
            )
        return record

    monkeypatch.setattr(seal, "crosscheck_answer", lying_once)
    made = build.generate_task(small_key("course"), GenerationSettings(crosscheck=True))
    assert len(calls) == 2 and made.answer.certificate.attempt == 1
    (event,) = made.events
    assert event["kind"] == "crosscheck_disagreement" and event["attempt"] == 0
    assert event["primary"]["solver"] == "ortools-cp-sat" and event["primary"]["version"]
    assert event["secondary"]["solver"] == "highs" and "highs" in event["secondary"]["version"]
    assert event["settled"]["method"] == "enumeration" and event["settled"]["truth_unique"] is True
    assert event["settled"]["right"] == "ortools-cp-sat"
    manifest = write_release(tmp_path / "r", [made], "r", "1.0.0", {}, False)
    assert manifest["counts"]["crosscheck_disagreements"] == 1
    assert manifest["build_events"][0]["task_id"] == made.task.task_id


def test_settling_by_enumeration_says_when_it_cannot():
    from pipeline.generation.build import settle

    made = generate_task(small_key("course", hidden_slots=11, decoy_budget=19))
    verdict = settle(made.task, made.answer, limit=10)
    assert verdict["method"] == "none" and "settle_limit=10" in verdict["reason"]
    assert settle(made.task, made.answer, limit=10**9)["truth_unique"] is True


def test_a_renamed_field_in_an_answer_file_is_an_error_not_a_zero(generated):
    from gridbench_core.errors import UserError

    data = generated.answer.to_dict()
    data["measures"]["dfs_nodez"] = data["measures"].pop("dfs_nodes")
    with pytest.raises(UserError, match="missing field 'dfs_nodes'"):
        answer_from_dict(data)
    data = generated.answer.to_dict()
    del data["certificate"]["ok"]
    with pytest.raises(UserError, match="certificate: missing field 'ok'"):
        answer_from_dict(data)


def test_a_budget_at_capacity_fills_every_cell_to_k_minus_1_decoys_and_no_further():
    """B = H (K - 1): every hidden cell holds exactly K - 1 decoys (none more, which would
    leave no room for the truth among K candidates)."""
    from pipeline.generation import GenerationSettings, TaskKey
    from pipeline.generation.build import draw_draft

    for index in range(12):
        draft = draw_draft(TaskKey("toy", 3, 3, 3, 6, 3, 0, index), GenerationSettings(), 0)
        assert sorted(len(draft.decoys.get(cell, [])) for cell in draft.hidden) == [2, 2, 2], index


def test_no_radius_is_cut_at_the_truth_s_total():
    """An outside audit (helper-38): a minimum's radius cut at the truth's count T (R <= T)
    drew its shown bound uniformly on 0..T whenever R >= T, so P(bound | T') = 1 / (T' + 1)
    favoured completions of smaller counts (+0.007 over the far-side reader). A planted bug
    before that (q28) had cut windows and minima for the opposite reason; an uncut radius
    keeps every offset 0..R equally likely for every truth, and a lower side below 0 is
    shown as drawn. Every kind of bound keeps its whole radius, and a minimum's and a
    window's shown lower side take every value T - R..T, below 0 included."""
    from pipeline.generation.bounds import radius, shown_rules, value
    from pipeline.generation.build import draw_draft

    seen = set()
    for domain in ("course", "travel", "workforce"):
        for index in range(4):
            draft = draw_draft(TaskKey(domain, 5, 5, 6, 6, 8, 0, index), GenerationSettings(), 0)
            for bound in draft.bounds:
                truth = value(draft, bound)
                bound.radius = truth + 3
                assert radius(bound) == truth + 3 and radius(bound, 2) == truth + 5
                if bound.upper and not bound.window:
                    continue
                lows = set()
                for k in range(bound.radius + 1):
                    bound.offset = (k + 0.5) / (bound.radius + 1)
                    rules = shown_rules(draft, bound)
                    lows.add(min(rule.bound for rule in rules) if bound.window else rules[0].bound)
                    if bound.window:
                        assert max(r.bound for r in rules) - min(r.bound for r in rules) == bound.radius
                assert lows == set(range(truth - bound.radius, truth + 1)), (bound, truth)
                seen.add("window" if bound.window else "minimum")
    assert seen == {"window", "minimum"}, seen


def test_a_radius_a_completion_set_is_drawn_short_of_its_edge():
    """A window narrowed (or widened) to one unit short of another completion said, by its
    width alone, that a completion lies exactly one unit outside the truth's box (an outside
    reader of widths: +0.42 over chance with min_depth=fixpoint). ``short_of`` draws the
    radius between (1 - jitter) x the edge and the edge."""
    import random
    from types import SimpleNamespace

    from pipeline.generation.bounds import short_of

    draft = SimpleNamespace(rng=random.Random(0))
    drawn = [short_of(draft, 10, 0.5) for _ in range(400)]  # type: ignore[arg-type]
    assert set(drawn) == set(range(5, 11))  # every radius from half the edge to it
    assert short_of(draft, 0, 0.5) == 0 and short_of(draft, 7, 0.0) == 7  # type: ignore[arg-type]
    assert {short_of(draft, 1, 1.0) for _ in range(50)} == {0, 1}  # type: ignore[arg-type]
