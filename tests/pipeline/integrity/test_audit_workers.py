"""The audit read in worker processes (issue 30): each task is read apart, after the audit's
random draws are made in order, so the report is the same for one worker and for two, and the
same as the bounds audit read in one pass; and what a task alone determines is remembered only
inside :func:`solvers.checker.task_memo`, never across a change of the task outside it."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.integrity import audit, decoy_cells, reading
from pipeline.integrity.tells import bounds_audit
from pipeline.parallel import _Shared, shared_pool
from solvers.checker import locally_valid_candidates, task_memo
from solvers.ladder import PROBING, SLOT, reasoning_depth, rung_domains
from solvers.propagation import decoy_resistance, linear_rows, propagate
from tests.pipeline.integrity.test_tells import _build


def test_the_audit_is_the_same_for_one_worker_and_two():
    pairs = _build(12)
    one = audit(pairs, splits=0, workers=1)
    two = audit(pairs, splits=0, workers=2)
    assert one == two
    assert one["bounds"] == bounds_audit(pairs, seed=0, rungs=(SLOT,))
    assert one["tasks"] == 12 and one["bounds"]["tasks"] == 12


def test_a_reading_started_before_other_work_gives_the_same_report():
    """write_release starts the audit's reading, writes the files while the workers read, then
    collects it: the same report as an audit that reads on its own."""
    pairs = _build(8)
    expected = audit(pairs, splits=0, workers=1)
    for workers in (1, 2):
        with shared_pool(workers), reading(pairs, workers=workers) as started:
            assert audit(pairs, splits=0, started=started) == expected
    with reading(pairs, workers=2) as started:
        with pytest.raises(ValueError, match="other pairs or settings"):
            audit(pairs[1:], splits=0, started=started)
    with reading(pairs, seed=3, workers=1) as started:
        with pytest.raises(ValueError, match="other pairs or settings"):
            audit(pairs, splits=0, started=started)


def test_a_reading_without_features_gives_the_policies_the_same_picks():
    """A release without classifiers (``audit_splits`` 0) reads the cells without keeping their
    features: the same options, truths and picks, so the same report; an audit that runs the
    classifiers refuses such a reading rather than score them on no features."""
    pairs = _build(8)
    for task, answer in pairs:
        full, bare = decoy_cells(task, answer), decoy_cells(task, answer, features=False)
        assert [(c.options, c.truth, c.policy_picks) for c in bare] == [
            (c.options, c.truth, c.policy_picks) for c in full
        ]
        assert all(c.candidate_side and c.readable and c.context for c in full)
        assert not any(c.candidate_side or c.readable or c.context for c in bare)
    expected = audit(pairs, splits=0, workers=1)
    for workers in (1, 2):
        with shared_pool(workers), reading(pairs, workers=workers, features=False) as started:
            assert audit(pairs, splits=0, started=started) == expected
    with reading(pairs, workers=1, features=False) as started:
        with pytest.raises(ValueError, match="other pairs or settings"):
            audit(pairs, splits=2, started=started)
    few = pairs[:4]  # the fewest the classifiers run on (they cost about a second on eight)
    with reading(few, workers=1) as started:  # with the features: the classifiers run
        assert audit(few, splits=2, started=started)["classifiers"]


def test_an_error_while_the_reading_runs_stops_its_workers():
    pairs = _build(6)
    with shared_pool(2):
        with pytest.raises(OSError, match="disk full"), reading(pairs, workers=2) as started:
            pool = _Shared.pool
            assert pool is not None  # the jobs are in the workers now
            raise OSError("disk full")
        assert _Shared.pool is None  # the block's workers were stopped with the error
        assert all(not p.is_alive() for p in (getattr(pool, "_processes", None) or {}).values())
        with reading(pairs, workers=2) as started:  # a new reading gets new workers
            assert audit(pairs, splits=0, started=started) == audit(pairs, splits=0, workers=1)


def test_every_rung_of_the_bounds_audit_is_the_same_read_apart():
    pairs = _build(6)
    rungs = (SLOT, PROBING)
    assert audit(pairs, splits=0, workers=2, bound_rungs=rungs)["bounds"] == bounds_audit(
        pairs, seed=0, rungs=rungs
    )


def test_what_is_remembered_matches_what_is_computed_afresh():
    task, answer = _build(1)[0]
    options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    fresh = (options, linear_rows(task, options), propagate(task), rung_domains(task), reasoning_depth(task))
    fresh_resistance = decoy_resistance(task, {(r.row, r.col): list(r.decoys) for r in answer.roles})
    with task_memo():
        for _ in range(2):  # the second time from the memory
            again = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
            assert again == options
            assert linear_rows(task, again) == fresh[1]
            assert propagate(task) == fresh[2]
            assert rung_domains(task) == fresh[3]
            assert reasoning_depth(task) == fresh[4]
    decoys = {(r.row, r.col): list(r.decoys) for r in answer.roles}
    with task_memo():
        assert decoy_resistance(task, decoys) == decoy_resistance(task, decoys)
    assert decoy_resistance(task, decoys) == fresh_resistance


def test_nothing_is_remembered_outside_a_block_or_across_blocks():
    task, _ = _build(1)[0]
    slot = task.slots[0]
    with task_memo():
        before = locally_valid_candidates(task, slot)
    # a task changed between two blocks (or outside one) is judged afresh
    item = before[0]
    task.items[item] = {**task.items[item]}
    broken = dataclasses.replace(slot, constraints=())
    assert locally_valid_candidates(task, broken) == list(slot.candidates)
    rule = slot.constraints[0]
    if isinstance(rule.value, int):  # an item changed to break the slot's first rule
        saved = task.items[item][rule.attribute]
        task.items[item][rule.attribute] = 10**9 if rule.op == "<=" else -(10**9)
        with task_memo():
            assert item not in locally_valid_candidates(task, slot)
        assert item not in locally_valid_candidates(task, slot)
        task.items[item][rule.attribute] = saved
    with task_memo():
        assert locally_valid_candidates(task, slot) == before


def test_lean_features_keep_every_feature_a_policy_reads_with_its_value_and_order():
    """Without classifiers the cells' features are worked out lean: only what the policies read.
    Every feature a policy reads (by the end of its name; a categorical value's flag that ends
    like one, too) is there with the same value and in the same order as in the full rows, so
    every sum over them is the same number: on tasks of every domain, and on toy tasks whose
    colours are named to end like a policy's features."""
    from pipeline.generation import GenerationSettings, TaskKey
    from pipeline.generation.build import generate_task
    from pipeline.integrity.bounds import options_of
    from pipeline.integrity.features import (
        POLICY_SUFFIXES,
        READ_SUFFIXES,
        candidate_side_features,
        readable_features,
    )

    tasks = [task for task, _ in _build(6)]
    for task in tasks[:3]:  # "red.room", "green.rank", "blue.margin"
        ends = {"red": ".room", "green": ".rank", "blue": ".margin"}
        items = {i: {**r, "color": f"{r['color']}{ends[str(r['color'])]}"} for i, r in task.items.items()}
        tasks.append(dataclasses.replace(task, items=items))
    for domain in ("course", "meal", "pc_build", "shopping", "travel", "workforce"):
        tasks.append(generate_task(TaskKey(domain, 5, 7, 12, 10, 25, seed=3), GenerationSettings()).task)
    cell_wide = ("position", "id_rank", "name_rank", "directed_rank_sum", "atypicality")
    flags = 0
    for task in tasks:
        all_options = options_of(task)
        for slot in task.slots:
            options = all_options[(slot.row, slot.col)]
            if len(options) < 2:
                continue
            side = candidate_side_features(task, slot, options)
            lean_side = candidate_side_features(task, slot, options, lean=True)
            read = readable_features(task, slot, options, side, all_options)
            lean_read = readable_features(task, slot, options, lean_side, all_options, lean=True)
            for full, lean, ends in ((side, lean_side, POLICY_SUFFIXES), (read, lean_read, READ_SUFFIXES)):
                for row, short in zip(full, lean, strict=True):
                    assert [(k, v) for k, v in short.items() if k.endswith(ends)] == [
                        (k, v) for k, v in row.items() if k.endswith(ends)
                    ]
                    flags += sum("=" in k for k in short)
            for row, short in zip(side, lean_side, strict=True):
                assert all(short[k] == row[k] for k in cell_wide)
    assert flags  # the renamed colours' flags were read
