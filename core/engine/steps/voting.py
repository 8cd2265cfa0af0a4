"""Weighted majority vote (WMV) over answer clusters, and plain majority vote (MV).

y = argmax_c sum_{i in c} v_i (RA-RAG eq. 2). IDK votes carry no cluster and are ignored.
Ties are broken deterministically: larger count of votes first, then the cluster seen first,
so that a rerun of the same question gives the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
