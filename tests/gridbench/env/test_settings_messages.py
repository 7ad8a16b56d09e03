"""``EnvSettings.validate`` to the letter: each refusal's exact line (values cut to 40
characters), the type checks one by one, and the boundaries that are allowed."""

from __future__ import annotations

import math

import pytest

from core.budgets import MAX_ALPHA, MAX_COUNT, MAX_SEED, EnvSettings
from core.errors import UserError

LONG = "x" * 50
CUT = "x" * 40


def refusal(**settings) -> str:
    with pytest.raises(UserError) as raised:
        EnvSettings(**settings).validate()
    return str(raised.value)


def test_each_refusal_is_its_exact_line_with_the_value_cut_to_40_characters():
    budgets = "use 'unlimited', 'paper' or an integer in 0..1000000000"
    assert refusal(query_budget=LONG) == f"query_budget='{CUT}': {budgets}"
    assert refusal(check_budget=-1) == f"check_budget=-1: {budgets}"
    assert refusal(query_budget=10**60) == f"query_budget={str(10**60)[:40]}: {budgets}"
    assert refusal(failure_rate=LONG) == f"failure_rate={CUT}: must be a finite number"
    assert refusal(check_alpha=LONG) == f"check_alpha={CUT}: must be a finite number"
    assert refusal(failure_rate=1.0) == "failure_rate=1.0 must be in [0, 1)"
    assert refusal(check_alpha=MAX_ALPHA * 2) == f"check_alpha={MAX_ALPHA * 2} must be in [0, {MAX_ALPHA:g}]"
    assert refusal(query_extra=LONG) == f"query_extra={CUT} must be a whole number in 0..1000000000"
    assert refusal(max_steps=0) == "max_steps=0 must be a whole number in 1..1000000000"
    assert refusal(seed=LONG) == f"seed={CUT} must be a whole number in 0..{MAX_SEED}"
    assert refusal(seed=None) == f"seed=None must be a whole number in 0..{MAX_SEED}"
    assert refusal(seed=-1) == f"seed=-1 must be a whole number in 0..{MAX_SEED}"


@pytest.mark.parametrize("name", ["failure_rate", "check_alpha"])
@pytest.mark.parametrize("value", [True, False, "0.1", None, math.nan, math.inf, -math.inf])
def test_a_rate_must_be_a_finite_number_and_not_a_bool(name, value):
    assert refusal(**{name: value}) == f"{name}={str(value)[:40]}: must be a finite number"


def test_the_boundaries_are_allowed():
    EnvSettings(check_alpha=MAX_ALPHA).validate()
    EnvSettings(check_alpha=0.0, failure_rate=0.0, query_budget=0, check_budget=0, max_steps=1).validate()
    EnvSettings(failure_rate=0.999, check_alpha=1).validate()  # an int alpha is a number
    EnvSettings(query_budget=MAX_COUNT, check_budget=MAX_COUNT, query_extra=MAX_COUNT).validate()
    EnvSettings(max_steps=MAX_COUNT, seed=MAX_SEED).validate()
    EnvSettings(seed=0).validate()
