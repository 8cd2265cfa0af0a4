"""Geometry for the dashboard's static SVG charts, computed server-side: sparklines, a
reliability line with its uncertainty band, and graph layouts. Plain Python + numpy; the
templates only place the numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


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


def mds_layout(
    ids: Sequence[int], distance: dict[tuple[int, int], float], *, default: float = 0.5, iterations: int = 150
) -> dict[int, tuple[float, float]]:
    """2-D positions in [0, 1]^2 whose distances follow `distance` (symmetric, keyed by
    sorted id pairs; missing pairs get `default`). Classical MDS (the spectral embedding of
    the double-centred squared distances) gives the start, a few stress-majorisation steps
    (SMACOF) refine it, so a bloc of sources that agree with each other and disagree with
    the rest lands as a tight group apart from the others. Deterministic."""
    n = len(ids)
    if n == 0:
        return {}
    if n == 1:
        return {ids[0]: (0.5, 0.5)}
    index = {sid: i for i, sid in enumerate(ids)}
    d = np.full((n, n), default, dtype=float)
    np.fill_diagonal(d, 0.0)
    for (a, b), value in distance.items():
        if a in index and b in index:
            d[index[a], index[b]] = d[index[b], index[a]] = value
    # Keep sources that always agree apart enough that every node and label stays visible.
    d = np.where(np.eye(n, dtype=bool), 0.0, np.maximum(d, 0.18))
    j = np.eye(n) - np.ones((n, n)) / n
    b = -0.5 * j @ (d**2) @ j
    vals, vecs = np.linalg.eigh(b)
    order = np.argsort(vals)[::-1][:2]
    x = vecs[:, order] * np.sqrt(np.maximum(vals[order], 1e-9))
    # Deterministic sign, and a tiny spread for degenerate spectra.
    x = x * np.where(x.sum(axis=0) < 0, -1.0, 1.0)
    x = x + 1e-3 * np.stack([np.cos(np.arange(n) * 2.4), np.sin(np.arange(n) * 2.4)], axis=1)
    for _ in range(iterations):  # SMACOF with unit weights
        diff = x[:, None, :] - x[None, :, :]
        dist = np.sqrt((diff**2).sum(axis=2))
        ratio = np.where(dist > 1e-9, d / np.maximum(dist, 1e-9), 0.0)
        np.fill_diagonal(ratio, 0.0)
        bmat = -ratio
        np.fill_diagonal(bmat, ratio.sum(axis=1))
        x = bmat @ x / n
    # One scale for both axes (distances stay comparable), centred in the unit square.
    x = x - x.min(axis=0)
    span = x.max(axis=0)
    scale = float(span.max()) if span.max() > 1e-9 else 1.0
    x = x / scale + (1.0 - span / scale) / 2
    return {sid: (float(x[i, 0]), float(x[i, 1])) for i, sid in enumerate(ids)}


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
