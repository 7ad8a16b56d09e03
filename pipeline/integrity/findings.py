"""The whole audit, its verdict and its Markdown: every policy (overall and by H), every
classifier when asked, the transfer classifiers when a companion build is given; a rule-free
reader above chance + :data:`TOLERANCE` (a score test, the readers judged together) fails it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from statistics import mean
from typing import Any

from gridbench_core.task import Answer, Task
from pipeline.integrity.classifiers import (
    FEATURE_SETS,
    MODELS,
    RULE_FREE_FEATURE_SETS,
    RULE_READING_POLICIES,
    TOLERANCE,
    classifier_score,
    transfer_score,
)
from pipeline.integrity.policies import DecoyCell, decoy_cells, policy_scores
from pipeline.integrity.tells import Event, bounds_audit, bounds_markdown, draws, task_events
from pipeline.parallel import parallel_imap
from solvers.checker import task_memo
from solvers.ladder import SLOT


def _read_task(
    job: tuple[Task, Answer, Task, int, tuple[int, ...], bool],
) -> tuple[list[DecoyCell], list[Event]]:
    """One task's decoy cells (with their features when asked) and bounds-audit events (its
    control copy and draw given)."""
    task, answer, control, draw_seed, rungs, features = job
    with task_memo():
        return decoy_cells(task, answer, features), task_events(task, answer, control, draw_seed, rungs)


ALPHA = 0.025  # one side of a 95% interval: the chance of a false finding over all readers


def rule_free_failures(report: dict[str, Any]) -> list[str]:
    """Every rule-free policy or classifier whose accuracy is above chance + ``TOLERANCE``, as
    ``name: accuracy [95% interval] vs chance`` (empty: the audit passes).

    Each reader is a score test of its accuracy against chance + ``TOLERANCE`` (the test the
    Wilson interval inverts), and the readers are judged together (Holm): some thirty readers
    at 2.5% each would otherwise name one by luck on a small release (4 of 4 cells right, with
    a chance of 0.417 each, happens 3% of the time)."""
    readers = {
        f"policy {name}": score
        for name, score in report["policies"].items()
        if name not in RULE_READING_POLICIES
    }
    for name, score in {**report["classifiers"], **report.get("transfer", {})}.items():
        if name.split("/")[0] in RULE_FREE_FEATURE_SETS:
            readers[f"classifier {name}"] = score
    p_values = {name: _p_value(score) for name, score in readers.items()}
    ranked = sorted(readers, key=lambda name: (p_values[name], name))
    found = set()
    for rank, name in enumerate(ranked):
        if p_values[name] > ALPHA / (len(ranked) - rank):
            break
        found.add(name)
    return [
        f"{name}: {score['accuracy']:.3f} [{score['low']:.3f}, {score['high']:.3f}] vs chance "
        f"{score['chance']:.3f}"
        for name, score in readers.items()
        if name in found
    ]


def _p_value(score: dict[str, float]) -> float:
    """One-sided p-value of an accuracy over ``cells`` against chance + ``TOLERANCE``."""
    line, cells, accuracy = score["chance"] + TOLERANCE, score["cells"], score["accuracy"]
    if not cells or math.isnan(accuracy) or accuracy <= line or line >= 1.0:
        return 1.0
    z = (accuracy - line) / math.sqrt(line * (1 - line) / cells)
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass
class Reading:
    """The per-task reading of an audit (:func:`reading`): the settings it was started with
    and its results, in the order of its pairs."""

    pairs: list[tuple[Task, Answer]]
    seed: int
    bound_rungs: tuple[int, ...]
    results: Iterator[tuple[list[DecoyCell], list[Event]]]
    features: bool = True


@contextlib.contextmanager
def reading(
    pairs: Iterable[tuple[Task, Answer]],
    seed: int = 0,
    bound_rungs: tuple[int, ...] = (SLOT,),
    workers: int = 1,
    features: bool = True,
) -> Iterator[Reading]:
    """Start reading every task of ``pairs`` (its decoy cells and its part of the bounds
    audit): with ``workers`` > 1 every job is handed to the pool now, so the block can write
    other files while the workers read; :func:`audit` given this ``Reading`` collects the
    results in order (the same report as reading inside it). Leaving the block stops workers
    still reading (an error, Ctrl-C). ``features=False``: the cells carry the policies' picks
    only, enough for an audit without classifiers (``splits`` 0, no companion)."""
    pairs = list(pairs)
    jobs = [
        (task, answer, control, draw_seed, bound_rungs, features)
        for (task, answer), (control, draw_seed) in zip(pairs, draws(pairs, seed), strict=True)
    ]
    if workers <= 1 or len(jobs) <= 1:
        yield Reading(pairs, seed, bound_rungs, map(_read_task, jobs), features)
        return
    read = parallel_imap(_read_task, jobs, workers, "audit", show=False, primed=True)
    try:
        next(read)  # hands every job to the pool
        yield Reading(pairs, seed, bound_rungs, read, features)
    finally:
        read.close()


def audit(
    pairs: Iterable[tuple[Task, Answer]],
    splits: int = 20,
    seed: int = 0,
    step: Callable[[str], None] | None = None,
    companion: Iterable[tuple[Task, Answer]] | None = None,
    bound_rungs: tuple[int, ...] = (SLOT,),
    workers: int = 1,
    started: Reading | None = None,
) -> dict[str, Any]:
    """Policies (overall and by H) and, when ``splits`` > 0, every classifier on every
    feature set, over the decoy cells of ``pairs``; with a ``companion`` build (another seed),
    the rule-free classifiers trained on it and tested on ``pairs``. ``failures`` lists every
    rule-free reader above chance + TOLERANCE, and every finding of the bounds audit
    (:mod:`pipeline.integrity.tells`; its soft heuristics over the options of ``bound_rungs``).
    ``step(name)``, when given, is told each stage as it starts (a progress display). Each
    task is read on its own (its decoy cells, its part of the bounds audit: in ``workers``
    processes when more than one), after the audit's draws are made in order, so the report
    does not depend on ``workers``; ``started``: that reading, begun earlier with
    :func:`reading` (for the same pairs, seed and rungs, with the features when the
    classifiers run) while the caller did other work."""
    step = step or (lambda name: None)
    pairs = list(pairs)
    step("reading the decoy cells")
    features = splits > 0 or companion is not None  # only the classifiers read the features
    with contextlib.ExitStack() as stack:
        if started is None:
            started = stack.enter_context(reading(pairs, seed, bound_rungs, workers, features))
        elif (
            (started.seed, started.bound_rungs) != (seed, bound_rungs)
            or (features and not started.features)
            or [(t.task_id, a.task_id) for t, a in started.pairs]
            != [(t.task_id, a.task_id) for t, a in pairs]
        ):
            raise ValueError("audit(started=...): the reading was started for other pairs or settings")
        results = list(started.results)
    cells: list[DecoyCell] = []
    hidden: dict[str, int] = {}
    events = []
    for (task, _), (task_cells, task_events_) in zip(pairs, results, strict=True):
        cells += task_cells
        events.append(task_events_)
        hidden[task.task_id] = task.hidden_slots
    by_h: dict[int, list[DecoyCell]] = {}
    for cell in cells:
        by_h.setdefault(hidden[cell.task_id], []).append(cell)
    step(f"policies on {len(cells)} decoy cells")
    report: dict[str, Any] = {
        "decoy_cells": len(cells),
        "tasks": len(hidden),
        "chance": mean(c.chance for c in cells) if cells else None,
        "policies": policy_scores(cells),
        "policies_by_hidden_slots": {h: policy_scores(part) for h, part in sorted(by_h.items())},
        "classifiers": {},
        "splits": splits,
        "seed": seed,
    }
    if splits > 0 and len(hidden) >= 4:
        for feature_set in FEATURE_SETS:
            for model in MODELS:
                step(f"classifier {model} on {feature_set} ({splits} splits)")
                score = classifier_score(cells, feature_set, model, splits, seed)
                report["classifiers"][f"{feature_set}/{model}"] = score
    if companion is not None and cells:
        step("transfer classifiers (trained on the companion build)")
        train = [cell for task, answer in companion for cell in decoy_cells(task, answer)]
        report["transfer"] = {
            f"{feature_set}/{model}": transfer_score(train, cells, feature_set, model, seed)
            for feature_set in RULE_FREE_FEATURE_SETS
            for model in MODELS
        }
        report["transfer_train_cells"] = len(train)
    report["bounds"] = bounds_audit(pairs, seed, step, bound_rungs, events)
    report["failures"] = rule_free_failures(report) + report["bounds"]["failures"]
    return report


def _row(name: str, score: dict[str, float]) -> str:
    lift = score["accuracy"] - score["chance"]
    return (
        f"| {name} | {score['accuracy']:.3f} | [{score['low']:.3f}, {score['high']:.3f}] | "
        f"{score['chance']:.3f} | {lift:+.3f} |"
    )


def _verdict(report: dict[str, Any]) -> list[str]:
    failures = report.get("failures", [])
    if not failures:
        return [
            f"**Verdict: pass.** No policy or classifier that reads no rule is more than "
            f"{TOLERANCE} above chance (judged together, Holm at {ALPHA} one-sided), and no soft "
            f"reader of the bounds more than {TOLERANCE} above its control (95% interval clear of "
            "that line)."
        ]
    return [
        f"**Verdict: FAIL.** {len(failures)} finding(s) clear of {TOLERANCE}: rule-free readers "
        f"above chance (judged together, Holm at {ALPHA} one-sided), or tells in the bounds above "
        "their control (95% interval clear of the line):",
        "",
        *(f"- {failure}" for failure in failures),
    ]


def audit_markdown(report: dict[str, Any]) -> str:
    """The audit as a markdown section (dataset card, `make audit`)."""
    head = "| | top-1 accuracy | 95% interval | chance | lift |\n|---|---|---|---|---|"
    free = {n: s for n, s in report["policies"].items() if n not in RULE_READING_POLICIES}
    reading = {n: s for n, s in report["policies"].items() if n in RULE_READING_POLICIES}
    lines = [
        f"Decoy cells: {report['decoy_cells']} in {report['tasks']} tasks; a uniform guess "
        f"among a cell's locally valid candidates is right {report['chance'] or 0:.3f} of the "
        "time.",
        "",
        *_verdict(report),
        "",
        "### Policies that read no rule (per cell, and joint over rows, columns, the grid)",
        "",
        head,
        *(_row(name, score) for name, score in free.items()),
        "",
        "### Policies that read a bound (the reasoning the task asks for)",
        "",
        head,
        *(_row(name, score) for name, score in reading.items()),
    ]
    if report["classifiers"]:
        lines += [
            "",
            f"### Classifiers (train on half of the tasks, test on the other half, "
            f"{report['splits']} random splits)",
            "",
            head,
        ]
        lines += [_row(name, score) for name, score in report["classifiers"].items()]
        lines += ["", *(f"- `{name}`: {text}" for name, text in FEATURE_SETS.items())]
    if report.get("transfer"):
        lines += [
            "",
            f"### Transfer: trained on another seed's build ({report['transfer_train_cells']} decoy "
            "cells), tested on this one",
            "",
            head,
            *(_row(name, score) for name, score in report["transfer"].items()),
        ]
    lines += [
        "",
        "### 'closest to (bound - visible sum) / open cells' by H",
        "",
        "| H | cells | accuracy | chance |",
        "|---|---|---|---|",
    ]
    for hidden, scores in report["policies_by_hidden_slots"].items():
        score = scores["closest_to_needed_share"]
        lines.append(f"| {hidden} | {score['cells']:.0f} | {score['accuracy']:.3f} | {score['chance']:.3f} |")
    if report.get("bounds"):
        lines += ["", *bounds_markdown(report["bounds"])]
    lines += [
        "",
        "Reading: (a) is what the candidates alone give away and (c) what the candidates and "
        "the visible cells give away; both must sit at chance, as must every policy that "
        "reads no rule. What (b) adds over (a) is arithmetic on the rules: a sum that contains "
        "the truth correlates with it (exactly at H = 1, about 1/sqrt(H) beyond); the "
        "`arithmetic` and `readable_without_arithmetic` rows split (b) into that part and the rest.",
    ]
    return "\n".join(lines) + "\n"
