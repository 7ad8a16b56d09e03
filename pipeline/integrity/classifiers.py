"""Classifiers (scikit-learn: ``pip install 'gridbench[audit]'``) that try to read the truth
from features of the options: trained on half of a build's tasks and tested on the other half
over random task-level splits, or trained on one build and tested on another (transfer)."""

from __future__ import annotations

import random
from statistics import mean
from typing import Any

from gridbench_core.errors import UserError
from pipeline.integrity.features import Features
from pipeline.integrity.policies import DecoyCell, _argmax, _summary

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
    require_sklearn()
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "logistic_regression":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=300, C=1.0))
    return HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, random_state=seed
    )


def require_sklearn() -> None:
    """One line naming the extra to install when scikit-learn is missing."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise UserError(
            "the audit's classifiers need scikit-learn: pip install 'gridbench[audit]' (or splits=0 "
            "transfer=false for the policies alone)"
        ) from None


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
