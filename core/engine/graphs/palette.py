"""Colour scales shared by the graphs and the dashboard's charts (agreement, reliability)."""

from __future__ import annotations


def rate_colour(rate: float) -> str:
    """Green (agree) through grey to red (disagree)."""
    rate = min(max(rate, 0.0), 1.0)
    if rate < 0.5:
        t = rate / 0.5
        r, g, b = 31 + t * (150 - 31), 122 + t * (150 - 122), 62 + t * (150 - 62)
    else:
        t = (rate - 0.5) / 0.5
        r, g, b = 150 + t * (179 - 150), 150 - t * (150 - 38), 150 - t * (150 - 30)
    return f"#{int(r):02x}{int(g):02x}{int(b):02x}"


def reliability_colour(reliability: float | None) -> str:
    if reliability is None:
        return "#9aa3b2"
    return rate_colour(1.0 - reliability)
