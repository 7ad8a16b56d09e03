"""Policies that pick an option in every cell with decoys, and their scores: per cell, from
the candidates alone or from what an agent reads without a check (bounds included), and the
visible-cell and joint policies of :mod:`pipeline.integrity.joint`. A uniform guess among a
cell's locally valid candidates (the truth and its decoys) is right 1 / |options| of the time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from domains import NumericAttribute, get_domain
from gridbench_core.stats import wilson
from gridbench_core.task import Answer, Slot, Task
from pipeline.integrity.context import context_features
from pipeline.integrity.features import Features, _z, candidate_side_features, readable_features
from pipeline.integrity.joint import Board, cell_picks, joint_picks
from solvers.checker import locally_valid_candidates


@dataclass
class DecoyCell:
    """One hidden cell with decoys: its options, which one is the truth, and features."""

    task_id: str
    domain: str
    options: list[str]
    truth: int
    candidate_side: list[Features] = field(default_factory=list)
    readable: list[Features] = field(default_factory=list)
    context: list[Features] = field(default_factory=list)  # visible cells, no rule
    policy_picks: dict[str, int] = field(default_factory=dict)

    @property
    def chance(self) -> float:
        """The chance of picking the truth at random among the options."""
        return 1.0 / len(self.options)


# Simple policies ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _suffixed(keys: tuple[str, ...], suffix: str) -> tuple[str, ...]:
    return tuple(k for k in keys if k.endswith(suffix))


Policy = Callable[[Task, Slot, list[str], list[Features], list[Features]], int]


def _argmax(scores: list[float], options: list[str]) -> int:
    return max(range(len(options)), key=lambda k: (scores[k], options[k]))


def _feature_policy(key: str, sign: float = 1.0, readable: bool = False) -> Policy:
    """Pick the option with the largest ``sign`` * feature ``key`` (a name ending in ``.``
    sums every feature with that suffix: all margins, all rooms, ...)."""

    def score(row: Features) -> float:
        if key.startswith("."):  # every feature with this suffix (the same keys in every row)
            return sum(row[f] for f in _suffixed(tuple(row), key))
        return row[key]

    def pick(task, slot, options, side, read):  # type: ignore[no-untyped-def]
        return _argmax([sign * score(row) for row in (read if readable else side)], options)

    return pick


def _high_in_rows_visibly_low(task: Task, slot: Slot, options: list[str], side: Any, read: Any) -> int:
    """Visible cells only, no rule read: on every numeric attribute, prefer the candidate the
    further above its cell's average, the lower its row's visible total stands among the rows'
    (the pattern balanced rows make, where every row has one total: issue 12's audit)."""
    scores = [0.0] * len(options)
    for attribute in get_domain(task.domain).attributes:
        if not isinstance(attribute, NumericAttribute):
            continue
        name = attribute.name
        totals = [
            float(sum(int(task.items[item][name]) for item in row if item is not None))  # type: ignore[call-overload]
            for row in task.grid
        ]
        row_z = _z(totals)[slot.row]
        for k, value in enumerate(_z([float(task.items[item][name]) for item in options])):  # type: ignore[arg-type]
            scores[k] -= row_z * value
    return _argmax(scores, options)


POLICIES: dict[str, Policy] = {
    "first_listed": _feature_policy("position", -1.0),
    "smallest_id": _feature_policy("id_rank", -1.0),
    "smallest_name": _feature_policy("name_rank", -1.0),
    "most_typical": _feature_policy("atypicality", -1.0),
    "most_average_rank": lambda t, s, o, side, r: _argmax(
        [-sum(abs(v - 0.5) for f, v in row.items() if f.endswith(".rank")) for row in side], o
    ),
    "largest_slot_margin": _feature_policy(".margin"),
    "best_on_summed_attributes": _feature_policy("directed_rank_sum"),
    "most_room_under_repeat_max": _feature_policy(".room", readable=True),
    "closest_to_needed_share": _feature_policy(".abs_gap_to_share", -1.0, readable=True),
    "closest_to_residual": _feature_policy(".abs_residual_rank", -1.0, readable=True),
    "high_in_rows_visibly_low": _high_in_rows_visibly_low,
}


# Collecting cells ---------------------------------------------------------------------------


def decoy_cells(task: Task, answer: Answer, features: bool = True) -> list[DecoyCell]:
    """Every cell of ``task`` with more than one option, with features and policy picks (the
    per-cell policies above and the visible-cell and joint ones of ``evaluation.joint``).
    ``features=False``: the picks only, for an audit without classifiers (the policies read
    the same features; the cells keep none, and the visible-cell ones are not computed)."""
    truth = {(r.row, r.col): r.truth for r in answer.roles}
    all_options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    board = Board.of(task)
    free = {**joint_picks(task, board), **cell_picks(task, board)}
    out = []
    for slot in task.slots:
        where = (slot.row, slot.col)
        options = all_options[where]
        if len(options) < 2:
            continue
        # without features kept, only what the policies read is worked out (the same picks)
        side = candidate_side_features(task, slot, options, lean=not features)
        read = readable_features(task, slot, options, side, all_options, lean=not features)
        cell = DecoyCell(task.task_id, task.domain, options, options.index(truth[where]))
        if features:
            cell.candidate_side, cell.readable = side, read
            cell.context = [
                {f"{task.domain}.ctx.{k}": v for k, v in row.items()}
                for row in context_features(board, where, options, free)
            ]
        cell.policy_picks = {
            name: policy(task, slot, options, side, read) for name, policy in POLICIES.items()
        }
        cell.policy_picks.update({name: options.index(chosen[where]) for name, chosen in free.items()})
        out.append(cell)
    return out


def policy_scores(cells: Iterable[DecoyCell]) -> dict[str, dict[str, float]]:
    """Per policy: share of decoy cells where it picks the truth, with chance and interval."""
    cells = list(cells)
    chance = mean(c.chance for c in cells) if cells else float("nan")
    names = list(cells[0].policy_picks) if cells else list(POLICIES)
    out = {}
    for name in names:
        hits = sum(c.policy_picks[name] == c.truth for c in cells)
        out[name] = _summary(hits / len(cells) if cells else float("nan"), chance, len(cells))
    return out


def _summary(accuracy: float, chance: float, cells: int) -> dict[str, float]:
    """The accuracy over ``cells`` with its 95% Wilson score interval: inside [0, 1], and wide
    where few cells were read, also at an accuracy of 0 or 1 (the normal approximation gave
    [1.000, 1.000] for 4 right out of 4, and a finding)."""
    low, high = wilson(accuracy * cells, cells)
    return {"accuracy": accuracy, "low": low, "high": high, "chance": chance, "cells": float(cells)}
