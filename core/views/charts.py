"""Geometry for the dashboard's static SVG charts, computed server-side: sparklines, a
reliability line with its uncertainty band, and graph layouts. Plain Python + numpy; the
templates only place the numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def sparkline(values: Sequence[float | None], width: int = 120, height: int = 28, pad: int = 3) -> dict[str, Any]:
    """Polyline points for values in [0, 1] (None values are skipped)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"points": "", "width": width, "height": height, "last": None}
    step = (width - 2 * pad) / max(len(vals) - 1, 1)
    pts = [(pad + i * step, pad + (1 - v) * (height - 2 * pad)) for i, v in enumerate(vals)]
    if len(pts) == 1:
        pts = [(pad, pts[0][1]), (width - pad, pts[0][1])]
    return {
        "points": " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in pts),
        "width": width,
        "height": height,
        "last": {"x": _fmt(pts[-1][0]), "y": _fmt(pts[-1][1])},
    }


def reliability_chart(history: Sequence[dict[str, Any]], width: int = 720, height: int = 260) -> dict[str, Any]:
    """A line of reliability across runs with the [low, high] band behind it (y in [0, 1])."""
    left, right, top, bottom = 44, 16, 12, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(history)

    def x(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else i * plot_w / (n - 1))

    def y(v: float) -> float:
        return top + (1 - min(max(v, 0.0), 1.0)) * plot_h

    points = [
        {
            "x": _fmt(x(i)),
            "y": _fmt(y(h["reliability"])),
            "run_id": h["run_id"],
            "created_at": h["created_at"],
            "reliability": h["reliability"],
            "low": h["low"],
            "high": h["high"],
            "answers": h["answers"],
        }
        for i, h in enumerate(history)
    ]
    upper = [f"{_fmt(x(i))},{_fmt(y(h['high']))}" for i, h in enumerate(history)]
    lower = [f"{_fmt(x(i))},{_fmt(y(h['low']))}" for i, h in reversed(list(enumerate(history)))]
    if n == 1:  # a single run: a short horizontal band so the interval is still visible
        h = history[0]
        upper = [f"{_fmt(x(0) - 12)},{_fmt(y(h['high']))}", f"{_fmt(x(0) + 12)},{_fmt(y(h['high']))}"]
        lower = [f"{_fmt(x(0) + 12)},{_fmt(y(h['low']))}", f"{_fmt(x(0) - 12)},{_fmt(y(h['low']))}"]
    label_every = max(1, math.ceil(n / 8))
    return {
        "width": width,
        "height": height,
        "left": left,
        "right": width - right,
        "top": top,
        "bottom": top + plot_h,
        "line": " ".join(f"{p['x']},{p['y']}" for p in points),
        "band": " ".join(upper + lower),
        "points": points,
        "yticks": [{"y": _fmt(y(v)), "label": f"{v:.1f}"} for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)],
        "xlabels": [{"x": p["x"], "label": f"#{p['run_id']}"} for i, p in enumerate(points) if i % label_every == 0],
    }
