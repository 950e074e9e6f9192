"""Latency figures as the project reports them: percentiles, never means."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank of the sorted values."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
