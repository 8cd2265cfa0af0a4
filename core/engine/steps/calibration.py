"""Calibrating an answer's probability on checked answers.

An answer's confidence is its probability under the one-coin model
(core.engine.steps.voting.answer_probability): every source's answer counts with its
log-odds weight, as if the sources erred independently. They do not: sources that read the
same poisoned passage, or a small model that misreads the same hard question for every
source, are wrong together, so agreement counts more than it should and a 0.95 answer is
right less often than 95% of the time. Without checked answers nothing can tell (correlated
errors look exactly like agreement on the truth); with them, the product fits how its
probabilities relate to being right.

The fit is Platt scaling on the probability's log-odds, p' = sigmoid(a * logit(p) + b), by
maximum a posteriori with a Gaussian prior around the identity (a = 1, b = 0), so that a
handful of checked queries moves the map a little and many move it to what they show. The
slope is kept >= 0: a calibration never turns a more confident answer into a less likely one.

The examples come from an estimation run's checked queries (gold): each query's stored
answers from every source, the run's estimated accuracies, and the vote among subsets of
the sources that answered, drawn as an answer would consult them (the kappa most accurate,
then random subsets of the same size, drawn with odds that grow with each source's
accuracy, as kappa-RRSS prefers reliable sources): the
winner is right when it is the checked answer's cluster. A checked query whose right answer
no source gave makes every winner wrong, which is what it shows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.engine.steps.dependence import once_per_group
from core.engine.steps.voting import answer_probability, candidate_weights, weighted_vote
from core.engine.types import JSONObject

# Gaussian prior of the MAP fit: standard deviations of the slope around 1 and of the
# intercept around 0 (in log-odds).
SLOPE_PRIOR_SD = 0.5
INTERCEPT_PRIOR_SD = 1.0
# Probabilities are clipped this far from 0 and 1 before their log-odds are taken.
EPSILON = 1e-4
# Subsets voted per checked query: the kappa most accurate sources plus this many random ones.
RANDOM_SUBSETS = 8
MIN_DRAW_ODDS = 0.05  # a source estimated at 0 is still drawn now and then
ECE_BINS = 10


@dataclass(frozen=True)
class Calibration:
    """p' = sigmoid(slope * logit(p) + intercept); the identity when nothing was checked."""

    slope: float = 1.0
    intercept: float = 0.0
    queries: int = 0  # checked queries the fit rests on
    examples: int = 0  # (probability, right) pairs drawn from them
    ece_before: float | None = None  # on those examples, before and after (in-sample)
    ece_after: float | None = None
    # Reliability diagram after calibration: (mean confidence, share right, count) per bin.
    diagram: tuple[tuple[float, float, int], ...] = field(default_factory=tuple)

    @property
    def fitted(self) -> bool:
        return self.examples > 0

    def apply(self, probability: float) -> float:
        """The calibrated probability (0 stays 0: no answer has no confidence)."""
        if probability <= 0.0 or not self.fitted:
            return probability
        z = self.slope * _logit(probability) + self.intercept
        return _sigmoid(z)

    def as_dict(self) -> JSONObject:
        return {
            "slope": self.slope,
            "intercept": self.intercept,
            "queries": self.queries,
            "examples": self.examples,
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
            "diagram": [list(row) for row in self.diagram],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object] | None) -> Calibration:
        """Read back what as_dict wrote; anything missing or malformed gives the identity."""
        if not data:
            return IDENTITY
        try:
            rows = data.get("diagram") or []
            if not isinstance(rows, list):
                return IDENTITY
            return cls(
                slope=_number(data["slope"]),
                intercept=_number(data["intercept"]),
                queries=int(_number(data.get("queries") or 0)),
                examples=int(_number(data.get("examples") or 0)),
                ece_before=_optional(data.get("ece_before")),
                ece_after=_optional(data.get("ece_after")),
                diagram=tuple((_number(r[0]), _number(r[1]), int(_number(r[2]))) for r in rows),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return IDENTITY


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _optional(value: object) -> float | None:
    return None if value is None else _number(value)


IDENTITY = Calibration()


def _logit(p: float) -> float:
    p = min(max(p, EPSILON), 1.0 - EPSILON)
    return math.log(p / (1.0 - p))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def fit(examples: Sequence[tuple[float, bool]], queries: int = 0, weight: float = 1.0) -> Calibration:
    """The MAP Platt map for (probability, right) examples; the identity without examples.
    Each example counts ``weight`` times in the likelihood (examples drawn from one query are
    far from independent: together they should count about as one). Examples with
    probability 0 (no answer) carry no information about confidence and are left out."""
    data = [(_logit(p), 1.0 if right else 0.0) for p, right in examples if p > 0.0]
    if not data:
        return IDENTITY
    prior_a, prior_b = 1.0 / SLOPE_PRIOR_SD**2, 1.0 / INTERCEPT_PRIOR_SD**2

    def log_posterior(a: float, b: float) -> float:
        total = -0.5 * prior_a * (a - 1.0) ** 2 - 0.5 * prior_b * b * b
        for x, y in data:
            z = a * x + b
            # log sigmoid(z) for y = 1, log sigmoid(-z) for y = 0, without overflow
            total -= weight * (math.log1p(math.exp(-abs(z))) + max(-z if y else z, 0.0))
        return total

    slope, intercept = 1.0, 0.0
    current = log_posterior(slope, intercept)
    for _ in range(100):  # Newton's method on the concave log posterior, with step halving
        g_a, g_b = -(slope - 1.0) * prior_a, -intercept * prior_b
        h_aa, h_ab, h_bb = -prior_a, 0.0, -prior_b
        for x, y in data:
            p = _sigmoid(slope * x + intercept)
            g_a += weight * (y - p) * x
            g_b += weight * (y - p)
            w = weight * p * (1.0 - p)
            h_aa -= w * x * x
            h_ab -= w * x
            h_bb -= w
        det = h_aa * h_bb - h_ab * h_ab  # > 0: the prior makes the Hessian negative definite
        step_a = (h_bb * g_a - h_ab * g_b) / det
        step_b = (h_aa * g_b - h_ab * g_a) / det
        scale = 1.0
        while scale > 1e-6:
            a, b = slope - scale * step_a, intercept - scale * step_b
            value = log_posterior(a, b)
            if value >= current:
                break
            scale /= 2.0
        else:
            break
        moved = abs(a - slope) + abs(b - intercept)
        slope, intercept, current = a, b, value
        if moved < 1e-10:
            break
    if slope < 0.0:  # anti-informative confidence: keep the order, say nothing more than the base rate
        slope = 0.0
        rate = (sum(y for _, y in data) + 0.5) / (len(data) + 1.0)
        intercept = _logit(rate)
    fitted = Calibration(slope=slope, intercept=intercept, queries=queries, examples=len(examples))
    probabilities = [p for p, _ in examples]
    right = [r for _, r in examples]
    after = [fitted.apply(p) for p in probabilities]
    return replace(
        fitted,
        ece_before=expected_calibration_error(probabilities, right),
        ece_after=expected_calibration_error(after, right),
        diagram=reliability_diagram(after, right),
    )


def reliability_diagram(
    probabilities: Sequence[float], right: Sequence[bool], bins: int = ECE_BINS
) -> tuple[tuple[float, float, int], ...]:
    """(mean confidence, share right, count) per equal-width bin that holds examples."""
    grouped: dict[int, list[tuple[float, bool]]] = {}
    for p, r in zip(probabilities, right, strict=True):
        grouped.setdefault(min(int(p * bins), bins - 1), []).append((p, r))
    return tuple(
        (
            sum(p for p, _ in rows) / len(rows),
            sum(1 for _, r in rows if r) / len(rows),
            len(rows),
        )
        for _, rows in sorted(grouped.items())
    )


def expected_calibration_error(probabilities: Sequence[float], right: Sequence[bool], bins: int = ECE_BINS) -> float:
    """Mean |confidence - accuracy| over equal-width bins, weighted by their counts."""
    total = len(probabilities)
    if total == 0:
        return 0.0
    return sum(count * abs(conf - acc) for conf, acc, count in reliability_diagram(probabilities, right, bins)) / total


def checked_examples(
    matrix: Sequence[Sequence[int | None]],
    truth: Mapping[int, int | None],
    accuracies: Sequence[float | None],
    weights: Sequence[float],
    kappa: int,
    *,
    random_subsets: int = RANDOM_SUBSETS,
    seed: int = 0,
    by_candidates: bool = False,
    units: Sequence[int | None] | None = None,
) -> list[tuple[float, bool]]:
    """(probability, right) of the vote among subsets of each checked query's answering sources.

    ``matrix[q][j]`` is source j's answer cluster on query q (None: it did not answer),
    ``truth[q]`` the checked query's right cluster (None: no source gave the right answer),
    ``accuracies`` and ``weights`` the run's estimated accuracy and voting weight per source;
    ``by_candidates``: weigh the votes by each subset's candidate answers, as answering does
    under a log-odds estimator (core.engine.strategies.pipeline.cluster_and_vote);
    ``units``: per source, its copy group (None: independent; core.engine.steps.dependence),
    so that a group counts once here as it does when a question is answered.
    """
    rng = random.Random(seed)
    order = sorted(range(len(accuracies)), key=lambda j: -(accuracies[j] or 0.0))
    examples: list[tuple[float, bool]] = []
    for q, right_cluster in sorted(truth.items()):
        if not 0 <= q < len(matrix):
            continue
        answered = [j for j in order if matrix[q][j] is not None]
        if not answered:
            continue
        size = min(max(kappa, 1), len(answered))
        subsets = [answered[:size]] + [_draw(answered, accuracies, size, rng) for _ in range(random_subsets)]
        for subset in subsets:
            labels = [matrix[q][j] for j in subset]
            subset_accuracies = [accuracies[j] for j in subset]
            subset_weights = [weights[j] for j in subset]
            if by_candidates:
                subset_weights = candidate_weights(labels, subset_accuracies, subset_weights)
            subset_units = [units[j] for j in subset] if units is not None else None
            if subset_units is not None:
                subset_weights = once_per_group(labels, subset_units, subset_weights)
            outcome = weighted_vote(labels, subset_weights)
            probability = answer_probability(labels, subset_accuracies, outcome.winner, units=subset_units)
            examples.append((probability, outcome.winner is not None and outcome.winner == right_cluster))
    return examples


def _draw(candidates: Sequence[int], accuracies: Sequence[float | None], size: int, rng: random.Random) -> list[int]:
    """``size`` of the candidates without replacement, each drawn with odds growing with its
    accuracy (as kappa-RRSS prefers reliable sources), by Efraimidis-Spirakis keys."""
    keyed = sorted(candidates, key=lambda j: -(rng.random() ** (1.0 / max(accuracies[j] or 0.0, MIN_DRAW_ODDS))))
    return keyed[:size]


def calibrate(
    matrix: Sequence[Sequence[int | None]],
    truth: Mapping[int, int | None],
    accuracies: Sequence[float | None],
    weights: Sequence[float],
    kappa: int,
    *,
    seed: int = 0,
    by_candidates: bool = False,
    units: Sequence[int | None] | None = None,
) -> Calibration:
    """The calibration a run's checked queries give: their examples (checked_examples), each
    query counting as one example in the fit."""
    examples = checked_examples(
        matrix, truth, accuracies, weights, kappa, seed=seed, by_candidates=by_candidates, units=units
    )
    return fit(examples, queries=len(truth), weight=1.0 / (1 + RANDOM_SUBSETS))
