"""Bounds without a tell (issue 26): on small toy grids, for every rule kind, the truth sits
inside its windows where the other completions that pass them sit, and at a one-sided bound
no more often than they do; the same audit catches the old draw (each side of a window an
independent slack away from the truth: the truth piles up in the middle), one-sided bounds at
the truth, and a build whose windows are centred on the truth (a soft heuristic reads it over
its control). Fixed seeds: each test can fail, and does on the planted draws."""

from __future__ import annotations

import random

import pytest

from pipeline.generation import GenerationSettings, TaskKey
from pipeline.generation import bounds as placement
from pipeline.generation.assemble import build_answer, build_task
from pipeline.generation.build import draw_draft, settle_bounds
from pipeline.generation.candidates import draw_filtered
from pipeline.generation.repair import RepairFailed, RepairStats
from pipeline.integrity.tells import bounds_audit
from solvers.ladder import SLOT
from solvers.results import SolverSettings

CAGED = GenerationSettings(cage_bits=0.0)  # cages on every key with two decoy cells
# a toy item's attributes span a few units, so a grid window drawn at the default share of one
# item's range has radius 0 (it names one total); every other task is drawn without cages and
# with wide grid windows, so that both kinds of window are met with room to sit anywhere
SETTINGS = (CAGED, GenerationSettings(cage_bits=1e9, window_slack_share=1.0))
TASKS = 90


def _build(count: int = TASKS) -> list:
    """Unique toy tasks drawn like a release's (sealing and measures left out: the bounds are
    final once repair is done)."""
    pairs, seed = [], 0
    while len(pairs) < count:
        key = TaskKey("toy", 4, 4, 8, 6, 5, seed=seed)
        seed += 1
        settings = SETTINGS[seed % 2]
        draft = draw_draft(key, settings, 0)
        try:
            settle_bounds(draft, key.task_id, settings, SolverSettings(), RepairStats())
        except RepairFailed:
            continue
        for cell in draft.hidden:
            draw_filtered(draft, cell, key.candidates_per_slot - 1 - len(draft.decoys.get(cell, [])))
        pairs.append((build_task(draft, key.task_id, 6, 5), build_answer(draft, key.task_id)))
    return pairs


def _old_draw(draft, bound):
    """The draw before issue 26: each side of a window, and a one-sided bound, an independent
    slack away from the truth (inside the virtual bound, so uniqueness is kept)."""
    truth, width = placement.value(draft, bound), placement.radius(bound)
    rng = random.Random(f"{bound.rules[0].name}{truth}{width}")
    if bound.window:
        low, high = truth - rng.randint(0, width), truth + rng.randint(0, width)
        return [rule.with_bound(high if rule.is_upper_bound else low) for rule in bound.rules]
    return [bound.rules[0].with_bound(truth)]  # a one-sided bound at the truth


@pytest.fixture(scope="module")
def correct():
    return bounds_audit(_build(), seed=0, rungs=(SLOT,))


def _planted(monkeypatch, draw):
    monkeypatch.setattr(placement, "shown_rules", draw)
    return bounds_audit(_build(), seed=0, rungs=(SLOT,))


def test_every_rule_kind_is_measured(correct):
    assert set(correct["positions"]) == {"grid", "cells"}
    assert set(correct["at_bound"]) >= {
        "repeat_max",
        "count_min",
        "count_max",
        "count_min_threshold",
        "sum_max/row",
    }
    assert all(sum(counts) >= 25 for counts in correct["position_counts"].values())


def test_the_truth_sits_where_other_passing_completions_sit(correct):
    assert not correct["failures"], correct["failures"]


def test_the_old_draw_is_caught(monkeypatch):
    report = _planted(monkeypatch, _old_draw)
    failures = "\n".join(report["failures"])
    assert "truth position in grid windows" in failures or "truth position in cells windows" in failures
    assert "truth at the bound of" in failures


def test_a_build_with_windows_centred_on_the_truth_is_read_over_its_control(monkeypatch):
    """Centred windows: the region heuristic (the combination of a cage's cells closest to its
    windows' middles) reads the truth far above its control, which puts the truth at a uniform
    position; the correct build stays level with its control."""
    report = _planted(monkeypatch, _centred)
    soft = report["regions"]["closest_to_middles"]
    assert soft["lift"] - soft["half"] > 0.03, soft
    assert any("region closest_to_middles" in failure for failure in report["failures"])


def test_the_correct_build_s_soft_heuristics_stay_level_with_their_control(correct):
    scored = [s for names in correct["soft"].values() for s in names.values()]
    scored += list(correct["regions"].values())
    assert scored and all(s["lift"] - s["half"] <= 0.03 for s in scored)
    assert correct["regions"]["closest_to_middles"]["release_n"] >= 40


def _centred(draft, bound):
    """Windows with the truth exactly in the middle (a blatant tell); one-sided bounds as
    drawn."""
    truth, width = placement.value(draft, bound), placement.radius(bound)
    if bound.window:
        return [
            rule.with_bound(truth + width if rule.is_upper_bound else truth - width) for rule in bound.rules
        ]
    rule = bound.rules[0]
    k = min(width, int(bound.offset * (width + 1)))
    return [rule.with_bound(truth + k if bound.upper else truth - k)]


def _row(share: float, null: float, half: float = 0.01) -> dict[str, float]:
    return {"share": share, "null": null, "diff": share - null, "half": half, "n": 500.0}


def test_the_bounds_audit_fails_a_bin_or_bound_off_its_null_in_either_direction():
    """A position bin or an at-bound share clear of its null by more than the tolerance fails
    the audit whether the truth sits there too often or too rarely (a hole in the truth's
    positions reads the truth as well as a pile does); within the tolerance it passes."""
    from pipeline.integrity.tells import BINS, TOLERANCE, bounds_failures

    def report(position: dict, at_bound: dict) -> dict:
        rows = [_row(0.2, 0.2)] * BINS
        return {
            "positions": {"sum": [position, *rows[1:]]},
            "at_bound": {"cap": at_bound},
            "soft": {},
            "regions": {},
        }

    fine = _row(0.2, 0.2)
    assert bounds_failures(report(fine, fine)) == []
    assert bounds_failures(report(_row(0.2 + TOLERANCE / 2, 0.2), fine)) == []
    for off in (+0.1, -0.1):
        failures = bounds_failures(report(_row(0.2 + off, 0.2), fine))
        assert len(failures) == 1 and "bin 1/" in failures[0], (off, failures)
        failures = bounds_failures(report(fine, _row(0.4 + off, 0.4)))
        assert len(failures) == 1 and "truth at the bound of cap" in failures[0], (off, failures)


def test_the_sampled_measure_is_each_sampled_completion_s_measure():
    """The one-sided null's measure over its sampled completions (worked out a table per cell
    and value at once) is, sample by sample, the rule's measure of that completed grid as the
    checker takes it (``rule_measure`` over each group: the largest count of any value under a
    repeat cap, the tightest group of a row or column rule)."""
    import numpy as np

    from pipeline.integrity.bounds import SAMPLES, _measure, _sampled_measure, one_sided, options_of

    checked = set()
    for task, _ in _build(24):
        options = options_of(task)
        draw = np.random.default_rng(7)
        picks = {cell: draw.integers(0, len(ids), size=SAMPLES) for cell, ids in sorted(options.items())}
        for rule in one_sided(task):
            measured = _sampled_measure(task, rule, options, picks)
            for sample in range(0, SAMPLES, 37):
                grid = [list(row) for row in task.grid]
                for (r, c), ids in options.items():
                    grid[r][c] = ids[picks[(r, c)][sample]]
                assert measured[sample] == _measure(task, rule, grid), (task.task_id, rule.name, sample)
            checked.add(str(rule.kind))
    assert {"repeat_max", "sum_max"} <= checked, checked
