"""A bloc that colludes on one topic and answers rightly on another: the label matrix the
per-topic copy-group tests share (tests/engine, tests/services)."""

from __future__ import annotations

import itertools

import numpy as np

from core.engine.reliability import get_estimator
from core.engine.reliability.base import ReliabilityResult, TopicalReliability
from core.engine.reliability.topical import topical_reliability

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


def colluding_topical(
    bounds: tuple[int, ...] = (N,), *, identify_topics: bool = True
) -> tuple[ReliabilityResult, TopicalReliability]:
    """AccuCopy's estimate of `colluding_on_a` and its per-topic estimate, the queries cut into
    topics "a", "b", ... at ``bounds`` (default: A and B as the matrix has them)."""
    labels = colluding_on_a()
    result = get_estimator("accucopy").estimate(labels)
    edges = [0, *bounds, len(labels)]
    membership = np.zeros((len(labels), len(edges) - 1))
    for t, (low, high) in enumerate(itertools.pairwise(edges)):
        membership[low:high, t] = 1.0
    keys = list("abcdefgh"[: len(edges) - 1])
    topical = topical_reliability(labels, result, membership, keys, scheme="log-odds", identify_topics=identify_topics)
    return result, topical
