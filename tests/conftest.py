"""Shared test helpers: hypothesis settings and small hand-built tasks."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
# `make mutate` (tests/mutation/mutate.py): the CI profile's examples and verdicts, without
# shrinking a failure (a mutant is killed by the first failing example; shrinking it only costs)
settings.register_profile(
    "mutation",
    parent=settings.get_profile("ci"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))


@pytest.fixture(scope="session")
def tiny_release(tmp_path_factory):
    """A four-task release (toy and course) shared by the hostile suites; they change copies."""
    from tests.hostile import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny"))
