"""The bounds part of the audit: the truth's position in every window against the null, the
truth at one-sided bounds against the null, and the soft heuristics against their control.

Verdict (each a failure line; the audit exits 1 on any):
- a position bin of a window kind whose share departs from the null's by more than
  :data:`TOLERANCE`, its 95% interval clear of that line; the same for the share of one-sided
  rules of a kind met with no slack;
- a soft heuristic whose accuracy over its control's, per cell or per whole task, at any
  rung, is more than :data:`TOLERANCE` with its interval clear of it (whole tasks are judged
  against the control, not against chance: the rules' own information lifts every reader of
  the bounds above chance -- a window that admits one option of a cell's makes "closest to
  the middle" right there -- and the control, which carries that information without a tell,
  is the line a tell must clear);
- a region heuristic the same way against its control.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from statistics import mean
from typing import Any

from gridbench_core.task import Answer, Task
from pipeline.integrity.bounds import (
    BINS,
    at_bound_null,
    departure,
    null_bins,
    one_sided,
    options_of,
    position_bin,
    rule_label,
    truth_at_bound,
    windows,
)
from pipeline.integrity.soft import (
    RUNG_NAMES,
    all_picks,
    cages,
    control_copy,
    region_cage_decided_alone,
    region_combinations,
    region_pick,
    rung_options,
)
from solvers.checker import task_memo

TOLERANCE = 0.03


class _Tally:
    """Hits and chances of one heuristic, on the release and on its control."""

    def __init__(self) -> None:
        self.hits: dict[str, list[float]] = {"release": [], "control": []}
        self.chance: dict[str, list[float]] = {"release": [], "control": []}

    def add(self, copy: str, hit: bool, chance: float) -> None:
        self.hits[copy].append(float(hit))
        self.chance[copy].append(chance)

    def summary(self) -> dict[str, float]:
        """Accuracy, chance, the control's, the lift over the control and its half-width."""
        out: dict[str, float] = {}
        for copy in ("release", "control"):
            hits = self.hits[copy]
            out[copy] = mean(hits) if hits else math.nan
            out[f"{copy}_chance"] = mean(self.chance[copy]) if hits else math.nan
            out[f"{copy}_n"] = float(len(hits))
        n, m = max(len(self.hits["release"]), 1), max(len(self.hits["control"]), 1)
        p, q = out["release"], out["control"]
        out["lift"] = p - q
        out["half"] = 1.96 * math.sqrt(max(p * (1 - p), 1e-12) / n + max(q * (1 - q), 1e-12) / m)
        out["chance_half"] = 1.96 * math.sqrt(max(p * (1 - p), 1e-12) / n)
        return out


Event = tuple[Any, ...]  # one contribution of one task to the audit's tallies, in order


def _score_picks(
    events: list[Event],
    where: str,
    copy: str,
    picks: dict[str, dict[Any, str]],
    truth: dict[Any, str],
    domains: dict[Any, list[str]],
    level: str,
) -> None:
    open_cells = [cell for cell, options in domains.items() if len(options) > 1]
    if not open_cells:
        return
    for name, chosen in picks.items():
        right = [chosen[cell] == truth[cell] for cell in open_cells]
        if level == "cell":
            for cell, hit in zip(open_cells, right, strict=True):
                events.append(("soft", where, name, copy, hit, 1 / len(domains[cell])))
        else:
            chance = math.prod(1 / len(domains[c]) for c in open_cells)
            events.append(("soft", where, name, copy, all(right), chance))


def _soft(task: Task, answer: Answer, control: Task, events: list[Event], rungs: tuple[int, ...]) -> None:
    truth = answer.truth_choice()
    for copy, version in (("release", task), ("control", control)):
        for rung, domains in rung_options(version, rungs).items():
            picks = all_picks(version, domains)
            for level in ("cell", "task"):
                _score_picks(events, f"{level}/{RUNG_NAMES[rung]}", copy, picks, truth, domains, level)


def _regions(task: Task, answer: Answer, control: Task, events: list[Event]) -> None:
    truth = answer.truth_choice()
    for copy, version in (("release", task), ("control", control)):
        for group, own in cages(version).items():
            combos = region_combinations(version, group, own)
            if not combos or len(combos) < 2:
                continue
            for name, sign in (("closest_to_middles", 1.0), ("farthest_from_middles", -1.0)):
                chosen = region_pick(version, own, combos, sign)
                hit = all(truth[cell] == item for cell, item in chosen.items())
                events.append(("region", name, copy, hit, 1 / len(combos)))


def _positions(task: Task, answer: Answer, events: list[Event]) -> None:
    options = options_of(task)
    for window in windows(task, answer):
        null = null_bins(task, window, options)
        if null is None:
            continue
        events.append(("position", window.kind, position_bin(window.position(window.truth)), null))


def _at_bounds(task: Task, answer: Answer, draw_seed: int, events: list[Event]) -> None:
    rules = one_sided(task)
    null = at_bound_null(task, rules, options_of(task), draw_seed)
    for rule in rules:
        chance = null[rule.name]
        if chance is None:
            continue
        events.append(("at", rule_label(rule), float(truth_at_bound(task, answer, rule)), chance))


def draws(pairs: Iterable[tuple[Task, Answer]], seed: int = 0) -> Iterator[tuple[Task, int]]:
    """Per task of ``pairs``, in order, what the audit draws at random for it: the control
    copy and the seed of the one-sided null's samples (one generator seeded by ``seed`` for
    the whole audit, so these are drawn in order; the rest of a task's audit is its own)."""
    rng = random.Random(seed)
    for task, answer in pairs:
        control = control_copy(task, answer, rng)
        yield control, rng.getrandbits(64)


def task_events(
    task: Task, answer: Answer, control: Task, draw_seed: int, rungs: tuple[int, ...] = tuple(RUNG_NAMES)
) -> list[Event]:
    """Everything one task adds to the bounds audit, in the order it is added (``control``
    and ``draw_seed``: its draws, :func:`draws`); tasks can be read apart, in any process."""
    events: list[Event] = []
    with task_memo():
        _positions(task, answer, events)
        _at_bounds(task, answer, draw_seed, events)
        _soft(task, answer, control, events, rungs)
        _regions(task, answer, control, events)
        one, many = region_cage_decided_alone(task)
    events.append(("cages", one, many))
    return events


def bounds_audit(
    pairs: Iterable[tuple[Task, Answer]],
    seed: int = 0,
    step: Callable[[str], None] | None = None,
    rungs: tuple[int, ...] = tuple(RUNG_NAMES),
    events: Iterable[list[Event]] | None = None,
) -> dict[str, Any]:
    """The bounds part of the audit over ``pairs`` (with ``step``: told when it starts); the
    soft heuristics over the options each of ``rungs`` leaves (the dataset card: all options
    only, the quick part; ``make audit``: every rung). ``events``, when given, are the
    :func:`task_events` of every pair, in order (found elsewhere, e.g. in worker processes)."""
    if step:
        step("bounds: positions, one-sided bounds, soft heuristics against their control")
    pairs = list(pairs)
    if events is None:
        events = (
            task_events(task, answer, control, draw_seed, rungs)
            for (task, answer), (control, draw_seed) in zip(pairs, draws(pairs, seed), strict=True)
        )
    observed: dict[str, list[int]] = defaultdict(lambda: [0] * BINS)
    expected: dict[str, list[float]] = defaultdict(lambda: [0.0] * BINS)
    at: dict[str, list[float]] = defaultdict(list)
    soft: dict[str, dict[str, _Tally]] = defaultdict(lambda: defaultdict(_Tally))
    regions: dict[str, _Tally] = defaultdict(_Tally)
    alone = counted = tasks = 0
    for task_events_ in events:
        tasks += 1
        for event in task_events_:
            kind = event[0]
            if kind == "position":
                _, window_kind, position, null = event
                observed[window_kind][position] += 1
                for k in range(BINS):
                    expected[window_kind][k] += null[k]
            elif kind == "at":
                _, label, hit, chance = event
                at[label].append(hit)
                at[label + " null"].append(chance)
            elif kind == "soft":
                _, where, name, copy, hit, chance = event
                soft[where][name].add(copy, hit, chance)
            elif kind == "region":
                _, name, copy, hit, chance = event
                regions[name].add(copy, hit, chance)
            else:
                _, one, many = event
                alone, counted = alone + one, counted + many
    report = {
        "tasks": tasks,
        "positions": {kind: departure(observed[kind], expected[kind]) for kind in sorted(observed)},
        "position_counts": {kind: observed[kind] for kind in sorted(observed)},
        "at_bound": _at_bound_summary(at),
        "soft": {
            where: {name: t.summary() for name, t in sorted(ts.items())} for where, ts in sorted(soft.items())
        },
        "regions": {name: t.summary() for name, t in sorted(regions.items())},
        "cages": {"decided_alone": alone, "cages": counted},
    }
    report["failures"] = bounds_failures(report)
    return report


def _at_bound_summary(at: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    out = {}
    for label in sorted(k for k in at if not k.endswith(" null")):
        truth, null = at[label], at[label + " null"]
        share, chance = mean(truth), mean(null)
        half = 1.96 * math.sqrt(max(chance * (1 - chance), 1e-12) / len(truth))
        out[label] = {
            "share": share,
            "null": chance,
            "diff": share - chance,
            "half": half,
            "n": float(len(truth)),
        }
    return out


def bounds_failures(report: dict[str, Any]) -> list[str]:
    """Every finding of the bounds audit clear of :data:`TOLERANCE` (empty: it passes)."""
    failures = []
    for kind, rows in report["positions"].items():
        for k, row in enumerate(rows):
            if abs(row["diff"]) - row["half"] > TOLERANCE:
                failures.append(
                    f"truth position in {kind} windows, bin {k + 1}/{BINS}: {row['share']:.3f} vs null "
                    f"{row['null']:.3f} (+-{row['half']:.3f})"
                )
    for label, row in report["at_bound"].items():
        if abs(row["diff"]) - row["half"] > TOLERANCE:
            failures.append(f"truth at the bound of {label}: {row['share']:.3f} vs null {row['null']:.3f}")
    scored = [(f"{where} {name}", s) for where, names in report["soft"].items() for name, s in names.items()]
    scored += [(f"region {name}", s) for name, s in report["regions"].items()]
    for name, s in scored:
        if s["lift"] - s["half"] > TOLERANCE:
            what = "solves whole tasks" if name.startswith("task/") else "picks the truth"
            failures.append(
                f"soft heuristic {name} {what} above its control: {s['release']:.3f} vs control "
                f"{s['control']:.3f} (chance {s['release_chance']:.3f}, n={s['release_n']:.0f})"
            )
    return failures


def bounds_markdown(report: dict[str, Any]) -> list[str]:
    """The bounds audit as Markdown lines (the dataset card, ``make audit``)."""
    lines = [
        "### Bounds: where the truth sits (against the other completions that pass each rule)",
        "",
        "Position of the truth inside each window, (T - lo) / (hi - lo), in fifths; the null is",
        "the same share for a random completion of the slot-valid candidates that passes the window.",
        "",
        "| windows | n | " + " | ".join(f"bin {k + 1}" for k in range(BINS)) + " |",
        "|---|---|" + "---|" * BINS,
    ]
    for kind, rows in report["positions"].items():
        count = sum(report["position_counts"][kind])
        cells = " | ".join(f"{row['share']:.3f} ({row['null']:.3f})" for row in rows)
        lines.append(f"| {kind} | {count} | {cells} |")
    lines += ["", "| one-sided rule | n | truth at the bound | null |", "|---|---|---|---|"]
    for label, row in report["at_bound"].items():
        lines.append(f"| {label} | {row['n']:.0f} | {row['share']:.3f} | {row['null']:.3f} |")
    lines += [
        "",
        "Soft heuristics (no sound reasoning) against a control copy whose windows put the truth at",
        "a uniform position (same candidates and widths); a tell is the lift over the control:",
        "",
        "| where | heuristic | n | accuracy | control | chance | lift [95%] |",
        "|---|---|---|---|---|---|---|",
    ]
    scored = [(where, name, s) for where, names in report["soft"].items() for name, s in names.items()]
    scored += [("region", name, s) for name, s in report["regions"].items()]
    for where, name, s in scored:
        lines.append(
            f"| {where} | {name} | {s['release_n']:.0f} | {s['release']:.3f} | {s['control']:.3f} | "
            f"{s['release_chance']:.3f} | {s['lift']:+.3f} [{s['lift'] - s['half']:+.3f}, "
            f"{s['lift'] + s['half']:+.3f}] |"
        )
    cages = report["cages"]
    if cages["cages"]:
        lines += [
            "",
            f"Cages decided by their own windows alone: {cages['decided_alone']} of {cages['cages']}.",
        ]
    return lines
