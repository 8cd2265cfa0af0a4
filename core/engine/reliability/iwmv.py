"""Iterative weighted majority voting (IWMV), RA-RAG's reliability estimator ("iwmv"), kept
for the paper's reproduction; the product's default is AccuCopy (accucopy.py).

Li & Yu (2014), as used by RA-RAG (eq. 3-4): start every weight at v_i = 1; estimate each
query's answer by WMV over the sources that did not abstain; a source's accuracy w_i is
its agreement with those estimates over its non-IDK answers; its weight is v_i = N*w_i - 1
(the paper's rescaling with N sources, :mod:`core.engine.reliability.weights`); repeat until
the weights stop moving.

Departures from the official code, each for robustness:
- w_i is the Beta(alpha, beta) posterior mean (agreements + alpha) / (answers + alpha + beta),
  so a source with no non-IDK answers gets the prior mean instead of 0/0, and one lucky
  answer does not make a source perfect;
- v_i is clipped to a small positive floor so a bad source never votes *against* a cluster;
- each source reports how many answers its estimate rests on and a 95% Wilson interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from core.engine.reliability.base import (
    ESTIMATORS,
    GOLD_WEIGHT,
    MISSING,
    UNIFORM_PRIOR,
    Candidates,
    LabelMatrix,
    Prior,
    ReliabilityResult,
    SourceReliability,
    as_label_matrix,
    gold_counts,
    gold_vector,
    source_results,
    to_matrix,
    wilson_interval,
)
from core.engine.reliability.weights import MIN_WEIGHT, voting_weights

# The contract's types used to live here; callers may still import them from this module.
__all__ = [
    "IWMV",
    "MISSING",
    "ReliabilityResult",
    "SourceReliability",
    "iwmv",
    "to_matrix",
    "wilson_interval",
]


def wmv_answers(labels: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """WMV per query; ties go to the larger count, then to the smaller label (deterministic).
    ``weights``: one per source, or one per query and source (per-topic weights,
    core.engine.reliability.topical)."""
    n_queries = labels.shape[0]
    if labels.size == 0:
        return np.full(n_queries, MISSING, dtype=np.int64)
    n_labels = int(labels.max()) + 1
    if n_labels <= 0:
        return np.full(n_queries, MISSING, dtype=np.int64)
    answered = labels >= 0
    rows = np.broadcast_to(np.arange(n_queries)[:, None], labels.shape)[answered]
    cols = labels[answered]
    w = np.broadcast_to(weights if weights.ndim == 2 else weights[None, :], labels.shape)[answered]
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
    votes: Sequence[Sequence[int | None]] | LabelMatrix,
    alpha: float = 1.0,
    beta: float = 1.0,
    min_weight: float = MIN_WEIGHT,
    tol: float = 1e-6,
    max_iter: int = 100,
    gold: Mapping[int, int] | None = None,
    gold_weight: float = GOLD_WEIGHT,
) -> ReliabilityResult:
    """Estimate source reliabilities from a queries x sources matrix of cluster labels.

    Labels are per-query cluster ids (>= 0); None or MISSING (-1) means IDK or no answer.
    ``gold`` fixes the answer of gold-checked queries (GOLD_NONE: none of the labels) and
    makes them count ``gold_weight`` times in the accuracies.
    """
    labels = as_label_matrix(votes)
    n_queries, n_sources = labels.shape
    answered = labels >= 0
    gold_labels = gold_vector(gold, n_queries)  # all MISSING without gold
    gold_rows = gold_labels != MISSING
    # Without gold every row weighs 1, and the weighted sums equal the plain counts exactly.
    row_weight = np.where(gold_rows, gold_weight, 1.0)[:, None]
    weighted_answers = (answered * row_weight).sum(axis=0)
    weights = np.ones(n_sources)
    accuracy = np.full(n_sources, alpha / (alpha + beta) if alpha + beta > 0 else 0.5)
    checked, right = gold_counts(labels, gold_labels)
    if checked.any():  # start from the gold-checked accuracies (see accucopy.gold_start)
        weights = voting_weights((right + alpha) / (checked + alpha + beta), n_sources, min_weight)
    estimate = np.full(n_queries, MISSING, dtype=np.int64)
    converged, iterations = False, 0
    for _ in range(max_iter):
        iterations += 1
        estimate = wmv_answers(labels, weights)
        estimate[gold_rows] = gold_labels[gold_rows]  # GOLD_NONE matches no label
        matches = (labels == estimate[:, None]) & answered
        denom = weighted_answers + alpha + beta
        # No evidence and no prior: fall back to a coin flip instead of 0/0.
        accuracy = np.divide(
            (matches * row_weight).sum(axis=0) + alpha, denom, out=np.full(n_sources, 0.5), where=denom > 0
        )
        new_weights = voting_weights(accuracy, n_sources, min_weight)
        change = float(np.abs(new_weights - weights).max()) if n_sources else 0.0
        weights = new_weights
        if change < tol:
            converged = True
            break
    sources = source_results(accuracy, weights, labels, estimate, gold_labels)
    answers_out = [None if int(a) < 0 else int(a) for a in estimate]
    return ReliabilityResult(sources, answers_out, iterations, converged)


@ESTIMATORS.register("iwmv")
@dataclass(frozen=True)
class IWMV:
    """IWMV as an :class:`~core.engine.reliability.base.Estimator` (registered as "iwmv")."""

    name: str = "iwmv"
    min_weight: float = MIN_WEIGHT
    tol: float = 1e-6
    max_iter: int = 100

    weight_scheme: str = "paper"

    def estimate(
        self,
        labels: LabelMatrix,
        *,
        prior: Prior = UNIFORM_PRIOR,
        gold: Mapping[int, int] | None = None,
        candidates: Candidates = None,
    ) -> ReliabilityResult:
        return iwmv(
            labels,
            alpha=prior.alpha,
            beta=prior.beta,
            min_weight=self.min_weight,
            tol=self.tol,
            max_iter=self.max_iter,
            gold=gold,
        )
