"""Weighted majority vote (WMV) over answer clusters, and plain majority vote (MV).

y = argmax_c sum_{i in c} v_i (RA-RAG eq. 2). IDK votes carry no cluster and are ignored.
Ties are broken deterministically: larger count of votes first, then the cluster seen first,
so that a rerun of the same question gives the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.reliability.weights import MAX_ACCURACY, PRIOR_ACCURACY, log_odds_weight


@dataclass(frozen=True)
class VoteOutcome:
    winner: int | None  # cluster id, None when every vote was IDK
    weights: dict[int, float]  # summed weight per cluster
    counts: dict[int, int]  # number of votes per cluster
    confidence: float  # winning weight / total weight of the non-IDK votes


def weighted_vote(clusters: Sequence[int | None], weights: Sequence[float]) -> VoteOutcome:
    """WMV over cluster labels; None (IDK) votes are skipped."""
    if len(clusters) != len(weights):
        raise ValueError("clusters and weights must have the same length")
    summed: dict[int, float] = {}
    counts: dict[int, int] = {}
    first_seen: dict[int, int] = {}
    for position, (cluster, weight) in enumerate(zip(clusters, weights, strict=False)):
        if cluster is None:
            continue
        summed[cluster] = summed.get(cluster, 0.0) + float(weight)
        counts[cluster] = counts.get(cluster, 0) + 1
        first_seen.setdefault(cluster, position)
    if not summed:
        return VoteOutcome(None, {}, {}, 0.0)
    winner = max(summed, key=lambda c: (summed[c], counts[c], -first_seen[c]))
    total = sum(summed.values())
    # Weights are positive in practice (reliability clips them); guard the degenerate sum.
    confidence = summed[winner] / total if total > 0 else counts[winner] / sum(counts.values())
    return VoteOutcome(winner, summed, counts, confidence)


def majority_vote(clusters: Sequence[int | None]) -> VoteOutcome:
    """MV: WMV with every weight equal to one."""
    return weighted_vote(clusters, [1.0] * len(clusters))


def candidate_count(clusters: Sequence[int | None]) -> int:
    """K for one question: the distinct answers given, plus one for "none of them"."""
    return len({c for c in clusters if c is not None}) + 1


def candidate_weights(
    clusters: Sequence[int | None], accuracies: Sequence[float | None], weights: Sequence[float]
) -> list[float]:
    """The votes' log-odds weights on this question, knowing its K = candidate_count answers:
    max(0, ln(w / (1 - w)) + ln(K - 1)) (core.engine.reliability.weights), so a source right
    less than half the time still counts where it beats chance (1 / K); never below the
    weight a vote came with (a thin-evidence source keeps its explored weight), and a source
    never estimated keeps its weight."""
    k = candidate_count(clusters)
    return [
        float(weight) if accuracy is None else max(float(weight), log_odds_weight(accuracy, k))
        for accuracy, weight in zip(accuracies, weights, strict=True)
    ]


def signed_log_odds(accuracy: float) -> float:
    """ln(w / (1 - w)), negative below 0.5 (log_odds_weight floors it at zero)."""
    w = min(max(float(accuracy), 1.0 - MAX_ACCURACY), MAX_ACCURACY)
    return math.log(w / (1.0 - w))


def answer_probability(
    clusters: Sequence[int | None],
    accuracies: Sequence[float | None],
    winner: int | None,
    *,
    other_mass: float = 1.0,
    units: Sequence[int | None] | None = None,
) -> float:
    """The probability that the ``winner`` cluster is the right answer under the one-coin
    model: each answer counts with its source's log-odds weight ln(w / (1 - w)) (floored at
    zero), abstentions count for nothing, a source never estimated has the prior accuracy
    (weight 0), and ``other_mass`` is left for "none of the answers given" (the truth of an
    open question may be an answer nobody gave). One unchecked source alone gives 0.5; four
    agreeing sources estimated at 0.2 give 0.5 too, not 1.0.

    The question's number K of candidate answers decides which answer wins (candidate_weights)
    but is left out here: wrong answers are not spread uniformly over the candidates (poisoned
    passages push one wrong answer), so the ln(K - 1) term made the probability over-confident
    (Beta prior, 9 sources, 3 seeds: ECE 0.115 with it, 0.093 without; docs/benchmarks.md).

    ``units``: per vote, the copy group of its source (None: independent;
    core.engine.steps.dependence). A group's votes for one answer are one voice, with the mean
    accuracy of those members, and that voice is not floored at zero: a colluding group's false
    answers are one shared value, so its agreement with an answer that it usually gets wrong
    counts against the answer (four agreeing copiers estimated at 0.2 give 0.2, not 0.5)."""
    if winner is None:
        return 0.0
    if len(clusters) != len(accuracies):
        raise ValueError("clusters and accuracies must have the same length")
    if units is not None and len(units) != len(clusters):
        raise ValueError("clusters and units must have the same length")
    score: dict[int, float] = {}
    grouped: dict[tuple[int, int], list[float]] = {}
    for i, (cluster, accuracy) in enumerate(zip(clusters, accuracies, strict=True)):
        if cluster is None:
            continue
        known = PRIOR_ACCURACY if accuracy is None else accuracy
        unit = units[i] if units is not None else None
        if unit is not None:
            grouped.setdefault((cluster, unit), []).append(known)
            continue
        score[cluster] = score.get(cluster, 0.0) + log_odds_weight(known, tie_break=False)
    for (cluster, _unit), members in grouped.items():
        score[cluster] = score.get(cluster, 0.0) + signed_log_odds(sum(members) / len(members))
    if winner not in score:
        return 0.0
    top = max(max(score.values()), 0.0)
    denom = sum(math.exp(s - top) for s in score.values()) + other_mass * math.exp(-top)
    return math.exp(score[winner] - top) / denom
