"""Latency figures as the project reports them: percentiles, never means."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank of the sorted values."""
    return percentiles(values, [q])[0]


def percentiles(values: list[float], qs: list[float]) -> list[float]:
    """The `qs`-th percentiles of `values`, as `percentile` gives each, sorting once."""
    ordered = sorted(values)
    last = len(ordered) - 1
    return [ordered[min(last, max(0, round(q / 100 * last)))] for q in qs]
