"""Shared test helpers: hypothesis settings and small hand-built tasks."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(scope="session")
def tiny_release(tmp_path_factory):
    """A four-task release (toy and course) shared by the hostile suites; they change copies."""
    from tests.hostile import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny"))
