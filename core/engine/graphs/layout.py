"""Graph layout: 2-D positions whose distances follow given pairwise distances (MDS)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
