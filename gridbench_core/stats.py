"""Intervals of a proportion, shared by the audit, the dataset card and the reports."""

from __future__ import annotations

import math

Z = 1.959964  # 95%


def wilson(hits: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of ``hits`` out of ``n`` (nan for none): inside [0, 1],
    and wide where n is small, also when every trial (or none) succeeded."""
    if n == 0 or math.isnan(hits):
        return float("nan"), float("nan")
    p = hits / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
