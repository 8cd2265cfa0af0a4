"""How a source's reliability is estimated: iterative weighted majority voting (IWMV).

Li & Yu (2014), as used by RA-RAG (eq. 3-4): start every weight at v_i = 1; estimate each
query's answer by WMV over the sources that did not abstain; a source's accuracy w_i is
its agreement with those estimates over its non-IDK answers; its weight is v_i = N*w_i - 1
(the paper's rescaling with N sources); repeat until the weights stop moving.

Departures from the official code, each for robustness:
- w_i is the Beta(alpha, beta) posterior mean (agreements + alpha) / (answers + alpha + beta),
  so a source with no non-IDK answers gets the prior mean instead of 0/0, and one lucky
  answer does not make a source perfect;
- v_i is clipped to a small positive floor so a bad source never votes *against* a cluster;
- each source reports how many answers its estimate rests on and a 95% Wilson interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MISSING = -1  # matrix code for IDK / no answer


@dataclass(frozen=True)
class SourceReliability:
    accuracy: float  # w_i, smoothed agreement rate
    weight: float  # v_i, the voting weight
    answers: int  # non-IDK answers the estimate rests on
    agreements: int
    interval: tuple[float, float]  # 95% Wilson interval of the raw agreement rate


@dataclass(frozen=True)
class ReliabilityResult:
    sources: list[SourceReliability]
    answers: list[int | None]  # estimated cluster label per query (None: nobody answered)
    iterations: int
    converged: bool

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.sources]

    @property
    def accuracies(self) -> list[float]:
        return [s.accuracy for s in self.sources]


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval; (0, 1) when there is no evidence at all."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def to_matrix(votes: Sequence[Sequence[int | None]]) -> npt.NDArray[np.int64]:
    """Queries x sources labels, None (IDK / missing) encoded as MISSING."""
    return np.array(
        [[MISSING if label is None else int(label) for label in row] for row in votes],
        dtype=np.int64,
    ).reshape(len(votes), -1)


def _estimate_answers(labels: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """WMV per query; ties go to the larger count, then to the smaller label (deterministic)."""
    n_queries = labels.shape[0]
    if labels.size == 0:
        return np.full(n_queries, MISSING, dtype=np.int64)
    n_labels = int(labels.max()) + 1
    if n_labels <= 0:
        return np.full(n_queries, MISSING, dtype=np.int64)
    answered = labels >= 0
    rows = np.broadcast_to(np.arange(n_queries)[:, None], labels.shape)[answered]
    cols = labels[answered]
    w = np.broadcast_to(weights[None, :], labels.shape)[answered]
    score = np.zeros((n_queries, n_labels))
    count = np.zeros((n_queries, n_labels))
    np.add.at(score, (rows, cols), w)
    np.add.at(count, (rows, cols), 1.0)
    # Lexicographic (score, count) argmax: count only matters on an exact weight tie.
    key = score + 1e-9 * count / (count.sum(axis=1, keepdims=True) + 1.0)
    key[count == 0] = -np.inf
    estimate: npt.NDArray[np.int64] = np.asarray(key.argmax(axis=1), dtype=np.int64)
    estimate[~answered.any(axis=1)] = MISSING
    return estimate


def iwmv(
    votes: Sequence[Sequence[int | None]] | npt.NDArray[np.int64],
    alpha: float = 1.0,
    beta: float = 1.0,
    min_weight: float = 1e-3,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> ReliabilityResult:
    """Estimate source reliabilities from a queries x sources matrix of cluster labels.

    Labels are per-query cluster ids (>= 0); None or MISSING (-1) means IDK or no answer.
    """
    labels = votes if isinstance(votes, np.ndarray) else to_matrix(votes)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.ndim != 2:
        raise ValueError("votes must be a 2-D queries x sources matrix")
    n_queries, n_sources = labels.shape
    answered = labels >= 0
    answers = answered.sum(axis=0)
    weights = np.ones(n_sources)
    estimate = np.full(n_queries, MISSING, dtype=np.int64)
    agreements = np.zeros(n_sources, dtype=np.int64)
    accuracy = np.full(n_sources, alpha / (alpha + beta) if alpha + beta > 0 else 0.5)
    converged = False
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        estimate = _estimate_answers(labels, weights)
        agreements = ((labels == estimate[:, None]) & answered).sum(axis=0)
        denom = answers + alpha + beta
        # No evidence and no prior: fall back to a coin flip instead of 0/0.
        accuracy = np.divide(agreements + alpha, denom, out=np.full(n_sources, 0.5), where=denom > 0)
        new_weights = np.maximum(n_sources * accuracy - 1.0, min_weight)
        change = float(np.abs(new_weights - weights).max()) if n_sources else 0.0
        weights = new_weights
        if change < tol:
            converged = True
            break
    sources = [
        SourceReliability(
            accuracy=float(accuracy[i]),
            weight=float(weights[i]),
            answers=int(answers[i]),
            agreements=int(agreements[i]),
            interval=wilson_interval(int(agreements[i]), int(answers[i])),
        )
        for i in range(n_sources)
    ]
    answers_out = [None if int(a) == MISSING else int(a) for a in estimate]
    return ReliabilityResult(sources, answers_out, iterations, converged)
