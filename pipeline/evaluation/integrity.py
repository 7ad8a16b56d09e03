"""Integrity audit: can the truth be told from its decoys without checking the rules?

On every hidden cell with decoys, the *options* are the candidates that pass the cell's slot
rules (the truth and its decoys); a uniform guess is right with probability 1 / |options|.

Two feature sets describe each option, read only from the task file:

(a) *candidate-side*: the option's own values (scaled to the natural range), its rank and
    z-score within the cell, its slot margins, how common its categories are in the cell,
    its list position, id and name ranks, and which way the domain's sum rules push each
    attribute. No bound values, no visible cells.
(b) *everything an agent can read without a check tool*: (a) plus the bounds and the
    visible cells -- room left under each cap, the per-cell share of what a sum still needs.

Classifiers (scikit-learn) are trained on the options of half of the tasks and pick, in
every decoy cell of the other half, the option with the highest score; many random
task-level splits give the accuracy and its interval. Simple policies (rank, margin,
"closest to (bound - visible sum) / hidden cells", ...) are scored the same way.
"""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from domains import CategoricalAttribute, NumericAttribute, get_domain
from gridbench.agents.base import atypicality
from gridbench.vocabulary import SUM_KINDS, RuleKind, Scope
from pipeline.evaluation.context import context_features
from pipeline.evaluation.joint import Board, cell_picks, joint_picks
from solvers.checker import locally_valid_candidates, rule_groups
from solvers.task import Answer, GlobalRule, Slot, Task

Features = dict[str, float]


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


def _ranks(values: list[float]) -> list[float]:
    """Average ranks scaled to [0, 1] (0.5 for a single option)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2
        start = end + 1
    top = max(len(values) - 1, 1)
    return [rank / top for rank in ranks]


def sum_directions(domain_name: str) -> dict[str, int]:
    """Per attribute, the domain's own preference: -1 when its sum is capped (cheaper looks
    better), +1 when it is a minimum (more looks better)."""
    out: dict[str, int] = {}
    for template in get_domain(domain_name).global_rules:
        if template.kind in SUM_KINDS:
            out.setdefault(template.attribute, -1 if template.kind == RuleKind.SUM_MAX else +1)
    return out


def _z(values: list[float]) -> list[float]:
    """Each value's distance from the mean in standard deviations (spread 0 counts as 1)."""
    centre = sum(values) / len(values)
    spread = (sum((v - centre) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    return [(v - centre) / spread for v in values]


def _name_number(name: str) -> float:
    digits = "".join(ch for ch in name if ch.isdigit())
    return float(digits) / 1000.0 if digits else 0.0


def candidate_side_features(task: Task, slot: Slot, options: list[str]) -> list[Features]:
    """Feature set (a) for every option of one cell."""
    domain = get_domain(task.domain)
    records = [task.items[i] for i in options]
    directions = sum_directions(task.domain)
    rows: list[Features] = [{} for _ in options]
    rank_sum = [0.0] * len(options)
    numeric: list[dict[str, float]] = [{} for _ in options]
    for attribute in domain.attributes:
        name = f"{task.domain}.{attribute.name}"
        if isinstance(attribute, NumericAttribute):
            values = [float(r[attribute.name]) for r in records]
            span = float(attribute.high - attribute.low)
            ranks, z = _ranks(values), _z(values)
            for k, value in enumerate(values):
                rows[k][f"{name}.value"] = (value - attribute.low) / span
                rows[k][f"{name}.rank"] = ranks[k]
                rows[k][f"{name}.z"] = z[k]
                rows[k][f"{name}.directed_rank"] = ranks[k] * directions.get(attribute.name, 0)
                rows[k][f"{name}.margin"] = _margin(slot, attribute.name, value) / span
                rank_sum[k] += ranks[k] * directions.get(attribute.name, 0)
                numeric[k][attribute.name] = value
        elif isinstance(attribute, CategoricalAttribute):
            counts = Counter(r[attribute.name] for r in records)
            for k, record in enumerate(records):
                rows[k][f"{name}.share_in_cell"] = counts[record[attribute.name]] / len(options)
                rows[k][f"{name}={record[attribute.name]}"] = 1.0
    typical = atypicality(numeric)
    position = {item_id: n for n, item_id in enumerate(slot.candidates)}
    id_ranks = _ranks([float(sum(j < i for j in options)) for i in options])
    names = [str(task.items[i]["name"]) for i in options]
    name_ranks = _ranks([float(sum(m < n for m in names)) for n in names])
    for k, item_id in enumerate(options):
        rows[k].update(
            {
                "position": position[item_id] / max(len(slot.candidates) - 1, 1),
                "id_rank": id_ranks[k],
                "name_rank": name_ranks[k],
                "name_number": _name_number(str(task.items[item_id]["name"])),
                "directed_rank_sum": rank_sum[k],
                "atypicality": typical[k],
                "options": float(len(options)),
            }
        )
    return rows


def _margin(slot: Slot, attribute: str, value: float) -> float:
    total = 0.0
    for rule in slot.constraints:
        if rule.attribute == attribute and rule.op in ("<=", ">="):
            threshold = float(rule.value)  # type: ignore[arg-type]
            total += threshold - value if rule.op == "<=" else value - threshold
    return total


def readable_features(
    task: Task,
    slot: Slot,
    options: list[str],
    side: list[Features],
    all_options: dict[tuple[int, int], list[str]],
) -> list[Features]:
    """Feature set (b): (a) (``side``) plus what the bounds, the visible cells and the other
    hidden cells' options (``all_options``: every cell's locally valid candidates, which an
    agent reads with the query tool) say about each option."""
    rows = [dict(row) for row in side]
    domain = get_domain(task.domain)
    cell = (slot.row, slot.col)
    for rule in task.global_constraints:
        group = next((g for g in rule_groups(rule, task.rows, task.cols) if cell in g), None)
        if group is None:
            continue  # a region rule over other cells
        visible = [task.items[task.grid[r][c]] for r, c in group if task.grid[r][c] is not None]  # type: ignore[index]
        open_cells = sum(1 for r, c in group if task.grid[r][c] is None)
        name = f"{task.domain}.{rule.name}"
        if rule.scope == Scope.CELLS:  # the cell's own region: one name in every task
            name = f"{task.domain}.region_{rule.attribute}_{'max' if rule.is_upper_bound else 'min'}"
        features = _rule_features(rule, name, visible, open_cells, domain)
        for k, item_id in enumerate(options):
            rows[k].update(features(task.items[item_id]))
        if rule.kind in SUM_KINDS:
            attribute = domain.numeric(rule.attribute)
            others = [
                [int(task.items[i][rule.attribute]) for i in all_options[c]]
                for c in group
                if c != cell and c in all_options
            ]
            values = [int(task.items[i][rule.attribute]) for i in options]
            room = rule.bound - sum(int(v[rule.attribute]) for v in visible)
            _residual_features(rows, rule, name, values, room, others, float(attribute.high - attribute.low))
    return rows


def _residual_features(
    rows: list[Features],
    rule: GlobalRule,
    name: str,
    values: list[int],
    room: int,
    others: list[list[int]],
    span: float,
) -> None:
    """Arithmetic on a sum: what is left for this cell once the visible cells and the other
    hidden cells' average options are counted, how far each option is from it (and its rank
    in the cell), and the room interval propagation leaves."""
    residual = room - sum(sum(o) / len(o) for o in others)
    lowest, highest = room - sum(max(o) for o in others), room - sum(min(o) for o in others)
    gaps = [abs(v - residual) for v in values]
    ranks = _ranks([float(g) for g in gaps])
    for k, value in enumerate(values):
        slack = (highest - value) if rule.kind == RuleKind.SUM_MAX else (value - lowest)
        rows[k].update(
            {
                f"{name}.residual_gap": (value - residual) / span,
                f"{name}.abs_residual_gap": gaps[k] / span,
                f"{name}.abs_residual_rank": ranks[k],
                f"{name}.interval_slack": slack / span,
            }
        )


def _rule_features(
    rule: GlobalRule, name: str, visible: list[dict], open_cells: int, domain: Any
) -> Callable[[dict[str, Any]], Features]:
    """The features ``rule`` gives an option (a function of its record); what the visible cells
    contribute is counted once."""
    attribute = rule.attribute
    if rule.kind in SUM_KINDS:
        numeric = domain.numeric(attribute)
        span = float(numeric.high - numeric.low)
        need = (rule.bound - sum(int(v[attribute]) for v in visible)) / open_cells

        def gap(record: dict[str, Any]) -> Features:
            value = (int(record[attribute]) - need) / span
            return {f"{name}.gap_to_share": value, f"{name}.abs_gap_to_share": abs(value)}

        return gap
    if rule.kind == RuleKind.REPEAT_MAX:
        used = Counter(v[attribute] for v in visible)
        return lambda record: {f"{name}.room": float(rule.bound - used[record[attribute]])}
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        at_least = int(rule.at_least or 0)
        need_share = (rule.bound - sum(1 for v in visible if int(v[attribute]) >= at_least)) / open_cells
        return lambda record: {f"{name}.meets_x_need": float(int(record[attribute]) >= at_least) * need_share}
    share = (rule.bound - sum(1 for v in visible if v[attribute] == rule.equals)) / open_cells
    return lambda record: {f"{name}.has_x_need": float(record[attribute] == rule.equals) * share}


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


def decoy_cells(task: Task, answer: Answer) -> list[DecoyCell]:
    """Every cell of ``task`` with more than one option, with features and policy picks (the
    per-cell policies above and the visible-cell and joint ones of ``evaluation.joint``)."""
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
        side = candidate_side_features(task, slot, options)
        read = readable_features(task, slot, options, side, all_options)
        context = [
            {f"{task.domain}.ctx.{k}": v for k, v in row.items()}
            for row in context_features(board, where, options, free)
        ]
        cell = DecoyCell(task.task_id, task.domain, options, options.index(truth[where]), side, read, context)
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
    half = 1.96 * math.sqrt(max(accuracy * (1 - accuracy), 1e-12) / max(cells, 1))
    return {
        "accuracy": accuracy,
        "low": accuracy - half,
        "high": accuracy + half,
        "chance": chance,
        "cells": float(cells),
    }


# Classifiers --------------------------------------------------------------------------------

MODELS = ("logistic_regression", "gradient_boosting")
ARITHMETIC = (
    ".gap_to_share",
    ".abs_gap_to_share",
    ".residual_gap",
    ".abs_residual_gap",
    ".abs_residual_rank",
    ".interval_slack",
)
FEATURE_SETS = {
    "candidate_side": "(a) the candidates' own values, ranks, margins, position, ids, names",
    "readable": "(b) (a) plus bounds and visible cells: all an agent reads without a check",
    "arithmetic": "only the sum arithmetic: each option against what the bound leaves once the "
    "visible cells and the other cells' options are counted",
    "readable_without_arithmetic": "(b) without those sum-share features",
    "visible": "(c) (a) plus the visible cells and the rule-free policies' picks: everything "
    "readable without reading a rule",
}
# policies and feature sets that read a bound (legitimate reasoning about the rules); every
# other one reads no rule and must stay at chance
RULE_READING_POLICIES = ("most_room_under_repeat_max", "closest_to_needed_share", "closest_to_residual")
RULE_FREE_FEATURE_SETS = ("candidate_side", "visible")
TOLERANCE = 0.03  # a rule-free reader more than this above chance (interval clear of it) fails


def _features(cell: DecoyCell, feature_set: str) -> list[Features]:
    if feature_set == "candidate_side":
        return cell.candidate_side
    if feature_set == "readable":
        return cell.readable
    if feature_set == "visible":
        return [{**side, **context} for side, context in zip(cell.candidate_side, cell.context, strict=True)]
    keep = feature_set == "arithmetic"
    return [{k: v for k, v in row.items() if k.endswith(ARITHMETIC) == keep} for row in cell.readable]


def _model(name: str, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "logistic_regression":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=300, C=1.0))
    return HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, random_state=seed
    )


def classifier_score(
    cells: list[DecoyCell], feature_set: str, model: str, splits: int = 10, seed: int = 0
) -> dict[str, float]:
    """Top-1 accuracy on decoy cells of held-out tasks, over ``splits`` random halvings of the
    tasks. The interval is the binomial one of the mean test size around the mean accuracy."""
    from sklearn.feature_extraction import DictVectorizer
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # one thread: OpenMP spinning on a shared machine costs more
        return _classifier_score(cells, feature_set, model, splits, seed, DictVectorizer)


def _classifier_score(
    cells: list[DecoyCell], feature_set: str, model: str, splits: int, seed: int, vectorizer_class: Any
) -> dict[str, float]:
    tasks = sorted({c.task_id for c in cells})
    rng = random.Random(seed)
    accuracies, chances, sizes = [], [], []
    for split in range(splits):
        held = set(rng.sample(tasks, len(tasks) // 2))
        train = [c for c in cells if c.task_id not in held]
        test = [c for c in cells if c.task_id in held]
        rows = [f for c in train for f in _features(c, feature_set)]
        labels = [int(k == c.truth) for c in train for k in range(len(c.options))]
        vectorizer = vectorizer_class(sparse=False)
        fitted = _model(model, seed + split).fit(vectorizer.fit_transform(rows), labels)
        scores = list(
            fitted.predict_proba(
                vectorizer.transform([f for cell in test for f in _features(cell, feature_set)])
            )[:, 1]
        )
        hits, start = 0, 0
        for cell in test:
            end = start + len(cell.options)
            hits += _argmax(scores[start:end], cell.options) == cell.truth
            start = end
        accuracies.append(hits / len(test))
        chances.append(mean(c.chance for c in test))
        sizes.append(len(test))
    return _summary(mean(accuracies), mean(chances), round(mean(sizes)))


def transfer_score(
    train: list[DecoyCell], test: list[DecoyCell], feature_set: str, model: str, seed: int = 0
) -> dict[str, float]:
    """Top-1 accuracy on the decoy cells of ``test`` (one build) of a classifier trained on
    ``train`` (another build, e.g. another seed): nothing of the test build is seen in training."""
    from sklearn.feature_extraction import DictVectorizer
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        vectorizer = DictVectorizer(sparse=False)
        rows = [f for c in train for f in _features(c, feature_set)]
        labels = [int(k == c.truth) for c in train for k in range(len(c.options))]
        fitted = _model(model, seed).fit(vectorizer.fit_transform(rows), labels)
        scores = list(
            fitted.predict_proba(vectorizer.transform([f for c in test for f in _features(c, feature_set)]))[
                :, 1
            ]
        )
    hits, start = 0, 0
    for cell in test:
        end = start + len(cell.options)
        hits += _argmax(scores[start:end], cell.options) == cell.truth
        start = end
    return _summary(hits / len(test), mean(c.chance for c in test), len(test))


def rule_free_failures(report: dict[str, Any]) -> list[str]:
    """Every rule-free policy or classifier whose accuracy is above chance + ``TOLERANCE`` with
    its interval clear of that line, as ``name: accuracy vs chance`` (empty: the audit passes)."""
    readers = {
        f"policy {name}": score
        for name, score in report["policies"].items()
        if name not in RULE_READING_POLICIES
    }
    for name, score in {**report["classifiers"], **report.get("transfer", {})}.items():
        if name.split("/")[0] in RULE_FREE_FEATURE_SETS:
            readers[f"classifier {name}"] = score
    return [
        f"{name}: {score['accuracy']:.3f} [{score['low']:.3f}, {score['high']:.3f}] vs chance "
        f"{score['chance']:.3f}"
        for name, score in readers.items()
        if score["low"] > score["chance"] + TOLERANCE
    ]


# The whole audit ----------------------------------------------------------------------------


def audit(
    pairs: Iterable[tuple[Task, Answer]],
    splits: int = 20,
    seed: int = 0,
    step: Callable[[str], None] | None = None,
    companion: Iterable[tuple[Task, Answer]] | None = None,
) -> dict[str, Any]:
    """Policies (overall and by H) and, when ``splits`` > 0, every classifier on every
    feature set, over the decoy cells of ``pairs``; with a ``companion`` build (another seed),
    the rule-free classifiers trained on it and tested on ``pairs``. ``failures`` lists every
    rule-free reader above chance + TOLERANCE. ``step(name)``, when given, is told each stage
    as it starts (a progress display)."""
    step = step or (lambda name: None)
    step("reading the decoy cells")
    cells: list[DecoyCell] = []
    hidden: dict[str, int] = {}
    for task, answer in pairs:
        cells += decoy_cells(task, answer)
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
    report["failures"] = rule_free_failures(report)
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
            f"{TOLERANCE} above chance (95% interval clear of that line)."
        ]
    return [
        f"**Verdict: FAIL.** {len(failures)} rule-free reader(s) more than {TOLERANCE} above "
        "chance, interval clear of it:",
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
    lines += [
        "",
        "Reading: (a) is what the candidates alone give away and (c) what the candidates and "
        "the visible cells give away; both must sit at chance, as must every policy that "
        "reads no rule. What (b) adds over (a) is arithmetic on the rules: a sum that contains "
        "the truth correlates with it (exactly at H = 1, about 1/sqrt(H) beyond); the "
        "`arithmetic` and `readable_without_arithmetic` rows split (b) into that part and the rest.",
    ]
    return "\n".join(lines) + "\n"
