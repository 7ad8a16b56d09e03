"""The integrity audit: can the truth be read without reading a rule? Policies per cell and
joint, classifiers within a build and across builds, and the verdict (docs/integrity.md)."""

from pipeline.integrity.classifiers import (
    FEATURE_SETS,
    MODELS,
    RULE_FREE_FEATURE_SETS,
    RULE_READING_POLICIES,
    TOLERANCE,
    classifier_score,
    transfer_score,
)
from pipeline.integrity.findings import Reading, audit, audit_markdown, reading, rule_free_failures
from pipeline.integrity.policies import POLICIES, DecoyCell, decoy_cells, policy_scores

__all__ = [
    "FEATURE_SETS",
    "MODELS",
    "POLICIES",
    "RULE_FREE_FEATURE_SETS",
    "RULE_READING_POLICIES",
    "TOLERANCE",
    "DecoyCell",
    "Reading",
    "audit",
    "audit_markdown",
    "classifier_score",
    "decoy_cells",
    "policy_scores",
    "reading",
    "rule_free_failures",
    "transfer_score",
]
