"""A bloc that colludes on one topic and answers rightly on another: the label matrix the
per-topic copy-group tests share (tests/engine, tests/services)."""

from __future__ import annotations

import numpy as np

N = 30  # queries per topic


def colluding_on_a(seed: int = 0) -> np.ndarray:
    """Queries 0..N-1 on topic A, N..2N-1 on topic B; the truth is label 0. Sources 0-2 give
    the one planted answer (label 1) on A and are right 90% of the time on B; sources 3-7 are
    right 90% of the time everywhere, their errors their own."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(2 * N):
        on_a = q < N
        bloc = [1 if on_a else (0 if rng.random() < 0.9 else 10 + j) for j in range(3)]
        honest = [0 if rng.random() < 0.9 else 20 + j for j in range(5)]
        rows.append(bloc + honest)
    return np.array(rows, dtype=np.int64)
