"""Verify re-proves the difficulty a release claims (issue 26): each lie below is forged the
way a careful forger would -- the answer file changed, the metadata rows and the dataset card
written again from it, every digest re-signed -- so only re-deriving the measures catches it.
Each failure names the task, the claim and what the task gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from pipeline.storage.verification import VerifySettings, verify_release
from solvers.results import SolverSettings
from tests.helpers_release import copy_release, redigest

SETTINGS = VerifySettings(SolverSettings(time_limit_s=20.0), None, 1)


def _resign(release: Path) -> None:
    """Metadata rows and card written again from the (forged) files, then every digest."""
    from gridbench_core.task_io import answer_from_dict, task_from_dict
    from pipeline.generation.records import CertifiedTask
    from pipeline.integrity import audit, audit_markdown
    from pipeline.storage.card import dataset_card
    from pipeline.storage.metadata import METADATA_SCHEMA, metadata_row

    meta = pl.read_parquet(release / "metadata.parquet")
    rows, pairs = [], []
    for row in meta.iter_rows(named=True):
        name = f"{row['domain']}/{row['task_id']}.json"
        task_bytes = (release / "tasks" / name).read_bytes()
        answer_bytes = (release / "answers" / name).read_bytes()
        task, answer = task_from_dict(json.loads(task_bytes)), answer_from_dict(json.loads(answer_bytes))
        key = SimpleNamespace(seed=row["seed"], index=row["index"])
        rows.append(metadata_row(CertifiedTask(key, task, answer), task_bytes, answer_bytes))  # type: ignore[arg-type]
        pairs.append((task, answer))
    meta = pl.DataFrame(rows, schema=METADATA_SCHEMA)
    meta.write_parquet(release / "metadata.parquet")
    manifest = json.loads((release / "manifest.json").read_text())
    card = dataset_card(manifest["name"], manifest["version"], meta, audit_markdown(audit(pairs, 0)))
    (release / "README.md").write_text(card)
    redigest(release)


def _forge(small_release: Path, tmp_path: Path, lies: list) -> tuple[dict[str, str], object]:
    """A copy of the small release with each lie (change, message) told by its own task, in
    order (tasks with decoys first); {task id: message} and the verify report."""
    release = copy_release(small_release, tmp_path / "forged")
    paths = sorted((release / "answers").rglob("*.json"))
    answers = [(path, json.loads(path.read_text())) for path in paths]
    answers.sort(key=lambda pair: -sum(len(role["decoys"]) for role in pair[1]["roles"]))
    assert len(lies) <= len(answers)
    expected = {}
    for (path, answer), (change, message) in zip(answers, lies, strict=False):
        change(answer["measures"])
        path.write_text(json.dumps(answer))
        expected[answer["task_id"]] = message
    _resign(release)
    return expected, verify_release(release, SETTINGS)


def test_the_untouched_release_is_re_signed_cleanly(small_release, tmp_path):
    release = copy_release(small_release, tmp_path / "resigned")
    _resign(release)
    report = verify_release(release, SETTINGS)
    assert report.ok, (report.failures, report.file_failures)


def _depth(**value):
    return lambda measures: measures["depth"].update(value)


LIES = [
    [  # the first four tasks hold decoys
        (
            lambda m: m["propagation"].update(resistant=m["propagation"]["decoys"], fixpoint=0, one_round=0),
            r"measures.propagation claims",
        ),
        (_depth(rung=4, name="search"), r"measures.depth claims search .* but the task gives"),
        (lambda m: m.update(shallow_decoys=m["shallow_decoys"] + 1), r"measures.shallow_decoys claims"),
        (lambda m: m.update(dfs_nodes=m["dfs_nodes"] + 7), r"measures.dfs_nodes claims"),
        (_depth(rung=3, name="probing"), r"measures.depth claims probing .* but the task gives slot"),
        (_depth(rung=99, name="oracle"), r"schema error in answer file at \['measures', 'depth'"),
        (
            _depth(open_after=[-1, 0, 0, 0]),
            r"schema error in answer file at \['measures', 'depth', 'open_after'",
        ),
        (_depth(open_after=[9, 9, 9, 9]), r"measures.depth claims .*open after each rung \[9, 9, 9, 9\]"),
    ],
    [
        (
            lambda m: m["effort"].update(search_nodes=m["effort"]["search_nodes"] + 40),
            r"effort.search_nodes claims",
        ),
        (
            lambda m: m["effort"].update(joint_bits=m["effort"]["joint_bits"] + 3.5),
            r"effort.joint_bits claims",
        ),
        (
            lambda m: m["effort"].update(search_nodes=0),
            r"schema error in answer file at \['measures', 'effort'",
        ),
        (
            lambda m: m["distance_to_ambiguity"].update(units=(m["distance_to_ambiguity"]["units"] or 0) + 1),
            r"measures.distance_to_ambiguity.units claims",
        ),
        (_depth(rung=2, name="probing"), r"measures.depth names rung 2 'probing'"),
        (lambda m: m.update(search_space=m["search_space"] * 2), r"measures.search_space claims"),
        (lambda m: m["effort"].update(search_capped=True), r"effort.search_nodes claims"),
        (lambda m: m.update(dfs_nodes=m["dfs_nodes"] + 2, dfs_capped=True), r"measures.dfs_nodes claims"),
    ],
]


def _direction(measures: dict) -> None:
    """One more decoy above the truth on the first attribute (and one fewer level with it)."""
    counts = next(iter(measures["decoy_direction"].values()))
    counts[0] += 1
    counts[2] = max(0, counts[2] - 1)


LIES.append(
    [
        (_direction, r"measures.decoy_direction claims"),
        (
            lambda m: m["distance_to_ambiguity"].update(
                share=(m["distance_to_ambiguity"]["share"] or 0) + 0.25
            ),
            r"measures.distance_to_ambiguity.share claims",
        ),
    ]
)


@pytest.mark.parametrize("group", [0, 1, 2])
def test_a_difficulty_lie_is_refused_naming_claim_and_value(small_release, tmp_path, group):
    expected, report = _forge(small_release, tmp_path, LIES[group])
    assert not report.ok
    for task_id, message in expected.items():
        reasons = report.failures.get(task_id, [])
        assert any(re.search(message, reason) for reason in reasons), (message, reasons)


def test_a_metadata_depth_that_is_not_the_answer_s_is_refused(small_release, tmp_path):
    release = copy_release(small_release, tmp_path / "meta")
    meta = pl.read_parquet(release / "metadata.parquet")
    meta = meta.with_columns(pl.lit(4, dtype=pl.Int64).alias("depth"), pl.lit("search").alias("depth_rung"))
    meta.write_parquet(release / "metadata.parquet")
    redigest(release)
    report = verify_release(release, SETTINGS)
    assert any("depth" in failure and "differ from its files" in failure for failure in report.file_failures)


def test_a_distance_claimed_of_a_rule_that_needs_more_units_is_refused():
    """Planted bug q46 (round 7): verify checked that the named rule's own loosening finds a
    second completion, not that it needs the claimed units, so the distance could be credited
    to any rule that is loosenable at all (its share recomputed to match)."""
    import dataclasses

    from pipeline.generation import GenerationSettings, TaskKey, generate_task
    from pipeline.storage.claimed import _distance
    from solvers.cpsat import CpSatModel
    from solvers.results import FEASIBLE, SolverSettings

    solver = SolverSettings(time_limit_s=30.0)
    found = 0
    for index in range(12):
        made = generate_task(TaskKey("course", 5, 5, 6, 6, 8, 0, index), GenerationSettings())
        measures, truth = made.answer.measures, made.answer.truth_choice()
        distance = measures.distance_to_ambiguity
        if distance.units is None:
            continue
        assert _distance(made.task, made.answer, measures, solver) == []  # the true claim holds
        model = CpSatModel(made.task, solver, truth)
        for rule in made.task.global_constraints:
            own = model.loosening_to_ambiguity(rule.name)
            if rule.name == distance.rule or own.status != FEASIBLE or own.objective == distance.units:
                continue
            if not rule.bound:
                continue
            share = round(distance.units / rule.bound, 6)
            lie = dataclasses.replace(distance, rule=rule.name, share=share)
            claimed = dataclasses.replace(measures, distance_to_ambiguity=lie)
            reasons = _distance(made.task, made.answer, claimed, solver)
            assert any("distance_to_ambiguity.rule" in reason for reason in reasons), reasons
            found += 1
            break
        if found >= 2:
            break
    assert found >= 2


def test_the_canonical_count_is_accepted_at_every_limit_and_refused_when_flipped():
    """A capped count claims the limit it was counted to and one more; verify counts to one
    node fewer and must see the cap. Before, it counted to the claimed number, so a task whose
    tree holds exactly limit + 1 nodes (one in the 100,000-task training set) was refused
    although its claim was true. Each limit around the tree's size, as the generator counts."""
    from pipeline.generation import GenerationSettings, TaskKey, generate_task
    from pipeline.generation.measures import CanonicalSearch
    from pipeline.storage.claimed import _search

    made = generate_task(TaskKey("course", 5, 5, 6, 6, 8, 0, 0), GenerationSettings())
    size, _, capped = CanonicalSearch(made.task, 10**9).run()
    assert not capped and size > 3
    for limit in sorted({0, 1, 2, size - 2, size - 1, size, size + 1, size + 5}):
        nodes, _, capped = CanonicalSearch(made.task, limit).run()
        assert capped == (size > limit) and nodes == (limit + 1 if capped else size)
        claim = SimpleNamespace(dfs_nodes=nodes, dfs_capped=capped)
        assert _search(made.task, claim) == [], (limit, nodes, capped)  # type: ignore[arg-type]
        flipped = SimpleNamespace(dfs_nodes=nodes, dfs_capped=not capped)
        # the tree's own size is true both ways: uncapped, and capped at one node fewer
        assert (_search(made.task, flipped) == []) == (nodes == size), (limit, nodes, not capped)  # type: ignore[arg-type]
    for lie in ((size + 1, True), (size - 1, False), (size + 1, False), (0, True), (-1, False)):
        claim = SimpleNamespace(dfs_nodes=lie[0], dfs_capped=lie[1])
        assert _search(made.task, claim), lie  # type: ignore[arg-type]


def test_a_count_claimed_capped_below_the_configured_limit_is_refused(small_release, tmp_path):
    """A tree of N nodes claimed capped at N (as if counted to N - 1) is true of the tree but
    not of the release's dfs_node_limit: the metadata check ties every capped count to it."""
    _, report = _forge(small_release, tmp_path, [(lambda m: m.update(dfs_capped=True), "")])
    assert any("canonical search counts do not fit" in failure for failure in report.file_failures), (
        report.file_failures
    )
