"""Accuracy with its 95% interval, and agreement of estimated with true reliabilities."""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy import stats

from core.engine.reliability.base import wilson_interval as reliability_wilson

Z95 = 1.959963984540054


def wilson_interval(correct: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of an accuracy (used when there is a single seed); an empty
    question set reports (0, 0) where the reliability estimate reports "no evidence"."""
    if total <= 0:
        return (0.0, 0.0)
    return reliability_wilson(correct, total, z)


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of per-seed values."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0)
    mean = sum(values) / n
    if n == 1:
        return (mean, mean)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return (mean - half, mean + half)


def accuracy_interval(per_seed_correct: Sequence[Sequence[bool]]) -> tuple[float, tuple[float, float]]:
    """Mean accuracy over seeds and its 95% interval.

    Several seeds: a t interval over the per-seed accuracies. One seed: a Wilson interval
    over that seed's questions.
    """
    accuracies = [sum(c) / len(c) if c else 0.0 for c in per_seed_correct]
    mean = sum(accuracies) / len(accuracies) if accuracies else 0.0
    if len(per_seed_correct) == 1:
        only = per_seed_correct[0]
        return mean, wilson_interval(sum(only), len(only))
    lo, hi = t_interval(accuracies)
    return mean, (max(0.0, lo), min(1.0, hi))


def correlations(estimated: Sequence[float], true: Sequence[float]) -> dict[str, float]:
    """Pearson and Spearman correlation; NaN when either side is constant."""
    if len(estimated) != len(true):
        raise ValueError("estimated and true reliabilities must align")
    if len(estimated) < 2 or len(set(estimated)) < 2 or len(set(true)) < 2:
        return {"pearson": float("nan"), "spearman": float("nan")}
    pearson = float(stats.pearsonr(estimated, true)[0])
    spearman = float(stats.spearmanr(estimated, true)[0])
    return {"pearson": pearson, "spearman": spearman}


def mean_ignoring_nan(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else float("nan")


def calibration(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> dict[str, object]:
    """Expected calibration error over ``bins`` equal-width confidence bins, and the
    reliability diagram's points (mean confidence, accuracy, count per non-empty bin).

    ECE = sum over bins of (n_b / n) * |accuracy_b - mean confidence_b|."""
    if len(confidences) != len(correct):
        raise ValueError("one confidence per answer")
    n = len(confidences)
    if n == 0:
        return {"ece": float("nan"), "bins": []}
    edges = [i / bins for i in range(bins + 1)]
    points = []
    ece = 0.0
    for b in range(bins):
        low, high = edges[b], edges[b + 1]
        members = [i for i, c in enumerate(confidences) if (low <= c < high) or (b == bins - 1 and c == high)]
        if not members:
            continue
        conf = sum(confidences[i] for i in members) / len(members)
        acc = sum(bool(correct[i]) for i in members) / len(members)
        ece += len(members) / n * abs(acc - conf)
        points.append({"low": low, "high": high, "confidence": conf, "accuracy": acc, "count": len(members)})
    return {"ece": ece, "bins": points}
