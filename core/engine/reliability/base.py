"""The estimator contract: what every source-reliability estimator takes and returns.

An estimator reads a queries x sources matrix of per-query answer labels (cluster ids
>= 0; MISSING = -1 for IDK or no answer) and returns, per source, its estimated accuracy
w_i in [0, 1] with the evidence it rests on, its voting weight v_i (see
:mod:`core.engine.reliability.weights`), and the estimated answer label per query.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeGuard

import numpy as np
import numpy.typing as npt

from core.engine.registry import Registry
from core.engine.topics import TopicModel

MISSING = -1  # matrix code for IDK / no answer
GOLD_NONE = -2  # gold code: the reference answer matches none of the query's answer labels

LabelMatrix = npt.NDArray[np.int64]
# Per query, the number K of candidate answers (None: unknown, open-ended); see
# core.engine.reliability.weights for what K does to a vote's weight.
Candidates = Sequence[int | None] | None


@dataclass(frozen=True)
class Prior:
    """Beta(alpha, beta) prior on a source's accuracy: IWMV smooths w_i with it, and every
    estimator gives a source without a single non-IDK answer its mean."""

    alpha: float = 1.0
    beta: float = 1.0

    @property
    def mean(self) -> float:
        """alpha / (alpha + beta); a coin flip when there is no prior at all."""
        total = self.alpha + self.beta
        return self.alpha / total if total > 0 else 0.5


UNIFORM_PRIOR = Prior()  # Beta(1, 1): mean 0.5, what estimation runs use by default


@dataclass(frozen=True)
class SourceReliability:
    accuracy: float  # w_i in [0, 1], the estimated accuracy shown to users
    weight: float  # v_i, the voting weight used by WMV and kappa-RRSS
    answers: int  # non-IDK answers the estimate rests on
    agreements: int  # of those, how many agree with the estimated answers
    interval: tuple[float, float]  # 95% Wilson interval of the raw agreement rate
    gold_answers: int = 0  # non-IDK answers to gold-checked queries
    gold_agreements: int = 0  # of those, how many match the reference answer

    @property
    def gold_accuracy(self) -> float | None:
        """The share of gold-checked answers that were right (None without gold evidence)."""
        return self.gold_agreements / self.gold_answers if self.gold_answers else None


# A dependent pair is shown as copying or colluding only when it shares at least this many
# false answers: the evidence an analyst can check. The estimator may find two sources dependent
# from their agreement on true answers alone ("about 0 false answers in common"), which is no
# sign of collusion to show anyone. One shared false value is no sign either: the demo's two
# accurate flight trackers share one wrong time in 86 common items (once checks settle the run),
# the three sites that mirror one feed share 27.
MIN_SHARED_FALSE = 2.0


@dataclass(frozen=True)
class Dependence:
    """How likely two sources are dependent (one copies the other, or both copy a third, or
    they collude), from the answers they share; ``a`` and ``b`` are column indices."""

    a: int
    b: int
    probability: float  # posterior probability of dependence
    shared: int  # queries both answered
    same_true: float  # expected number of shared answers that are true
    same_false: float  # expected number of shared answers that are false: the evidence of copying
    different: int


@dataclass(frozen=True)
class Identification:
    """Whether agreement identifies the estimate; column and row indices of the label matrix."""

    identified: bool
    reason: str
    estimate_side: list[int] = field(default_factory=list)  # sources giving the estimated answers (A)
    dissent_bloc: list[int] = field(default_factory=list)  # sources sharing answers the estimate rejects (B)
    contested: list[int] = field(default_factory=list)  # queries where the two groups disagree
    checks: list[int] = field(default_factory=list)  # contested queries whose reference answer settles it, best first
    agreement: tuple[float, float] = (0.0, 0.0)  # mean pairwise agreement within A and within B
    settled_by_gold: int = 0  # contested queries with a reference answer
    # Identified only because the estimate's side outnumbers the bloc (no reference answer
    # chose between them): settled enough to weigh by, and its disputed queries are still the
    # checks worth making (a campaign larger than the rule assumes would look the same).
    outnumbered: bool = False
    # Every dissent bloc that agreement does not settle (each is examined, largest first;
    # ``dissent_bloc`` is the first of them when there is one).
    unsettled_blocs: list[list[int]] = field(default_factory=list)

    @property
    def blocs(self) -> list[list[int]]:
        return [g for g in (self.estimate_side, self.dissent_bloc) if g]

    def as_dict(self, ids: list[int] | None = None, query_ids: list[int] | None = None) -> dict[str, object]:
        """JSON-ready; columns and rows mapped through ``ids`` / ``query_ids`` when given."""

        def cols(values: list[int]) -> list[int]:
            return [ids[v] for v in values] if ids is not None else list(values)

        def rows(values: list[int]) -> list[int]:
            return [query_ids[v] for v in values] if query_ids is not None else list(values)

        return {
            "identified": self.identified,
            "reason": self.reason,
            "estimate_side": cols(self.estimate_side),
            "dissent_bloc": cols(self.dissent_bloc),
            "contested": rows(self.contested),
            "checks": rows(self.checks),
            "agreement": [round(self.agreement[0], 4), round(self.agreement[1], 4)],
            "settled_by_gold": self.settled_by_gold,
            "unsettled_blocs": [cols(b) for b in self.unsettled_blocs],
            "outnumbered": self.outnumbered,
        }


@dataclass(frozen=True)
class TopicCell:
    """One source on one topic."""

    accuracy: float
    weight: float
    answers: float  # non-IDK answers on the topic's queries (soft: a query counts by its share)
    agreements: float
    interval: tuple[float, float]


@dataclass(frozen=True)
class TopicalReliability:
    """Per topic (columns of the membership) and source (columns of the label matrix)."""

    keys: list[str]
    cells: list[list[TopicCell]]  # [topic][source]
    answers: list[int | None]  # the per-query answers the topical weights give
    identification: list[Identification | None] = field(default_factory=list)  # per topic
    queries: list[float] = field(default_factory=list)  # per topic: its share of the queries
    rounds: int = 0
    model: TopicModel | None = None  # the topics (names, how a question is assigned)
    query_topics: list[int] = field(default_factory=list)  # per query of the run, its topic
    # Per topic, the pairs of sources (column indices) found dependent on its queries alone
    # (topical.topic_dependence): a bloc can collude on one subject and answer independently,
    # and rightly, on the others.
    dependence: list[list[Dependence]] = field(default_factory=list)

    def accuracy(self, topic: int, source: int) -> float:
        return self.cells[topic][source].accuracy

    def unsettled(self) -> list[int]:
        """Topics whose estimate agreement does not identify."""
        return [t for t, found in enumerate(self.identification) if found is not None and not found.identified]

    def outnumbered(self) -> list[int]:
        """Topics settled only by the estimate's side outnumbering a bloc (no reference answer)."""
        return [t for t, found in enumerate(self.identification) if found is not None and found.outnumbered]


def interleave(lists: list[list[int]]) -> list[int]:
    """The first of each list, then the second of each, ..., without repeats."""
    out: list[int] = []
    for rank in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if rank < len(x) and x[rank] not in out:
                out.append(x[rank])
    return out


@dataclass(frozen=True)
class ReliabilityResult:
    sources: list[SourceReliability]
    answers: list[int | None]  # estimated cluster label per query (None: nobody answered)
    iterations: int
    converged: bool
    # The probability, under the estimator's model, that each estimated answer is right
    # (empty when the estimator has no probabilistic model, e.g. IWMV, TruthFinder).
    confidence: list[float] = field(default_factory=list)
    dependence: list[Dependence] = field(default_factory=list)  # pairs the estimator examined
    # Whether agreement identifies this estimate (core.engine.reliability.identify); set by
    # core.engine.estimation, None from an estimator alone.
    identification: Identification | None = None
    # Per source and topic (core.engine.reliability.topical), when the run found topics
    topical: TopicalReliability | None = None

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.sources]

    @property
    def accuracies(self) -> list[float]:
        return [s.accuracy for s in self.sources]


class Estimator(Protocol):
    """A source-reliability estimator, registered by name in :mod:`core.engine.reliability`."""

    @property
    def name(self) -> str:
        """The registry name (a read-only ``name: str``: a class attribute or a frozen field)."""
        ...

    @property
    def weight_scheme(self) -> str:
        """How the accuracy becomes a voting weight ("paper" or "log-odds", see weights.py)."""
        ...

    def estimate(
        self,
        labels: LabelMatrix,
        *,
        prior: Prior = UNIFORM_PRIOR,
        gold: Mapping[int, int] | None = None,
        candidates: Candidates = None,
    ) -> ReliabilityResult:
        """Reliabilities (one per column, in column order) from a queries x sources matrix.

        ``gold`` maps a query (row) to its reference answer's label, or GOLD_NONE when the
        reference matches none of the answers: those rows' truth is fixed, and they count
        GOLD_WEIGHT times in the accuracies. ``candidates`` gives, per query, how many
        answers it has to choose from (None: open-ended, unknown); an estimator whose model
        has no use for it (IWMV, TruthFinder) ignores it."""
        ...


GOLD_WEIGHT = 3.0  # a gold-checked answer counts this many times in a source's accuracy


def gold_vector(gold: Mapping[int, int] | None, n_queries: int) -> npt.NDArray[np.int64]:
    """Per query: the gold label, GOLD_NONE, or MISSING (no gold)."""
    out = np.full(n_queries, MISSING, dtype=np.int64)
    for q, label in (gold or {}).items():
        if not 0 <= int(q) < n_queries:
            raise ValueError(f"gold query {q} is outside the matrix ({n_queries} queries)")
        if int(label) < GOLD_NONE:
            raise ValueError(f"gold label {label} of query {q} is not a label or GOLD_NONE")
        out[int(q)] = int(label)
    return out


def gold_counts(
    labels: LabelMatrix, gold: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per source: non-IDK answers to gold queries, and how many match the gold label."""
    checked = (gold != MISSING)[:, None] & (labels >= 0)
    return checked.sum(axis=0), (checked & (labels == gold[:, None])).sum(axis=0)


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval; (0, 1) when there is no evidence at all."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def interval_holding(interval: tuple[float, float], estimate: float) -> tuple[float, float]:
    """``interval`` widened just enough to hold ``estimate``.

    The interval is the Wilson interval of the raw agreement rate, while the estimate is
    smoothed by the prior and weighted by gold answers, so the two can part (a strong prior
    pulls the estimate towards its mean). A page that shows "0.00 [0.71, 0.92]" contradicts
    itself: the interval shown always contains the estimate it belongs to."""
    low, high = interval
    return (min(low, estimate), max(high, estimate))


def to_matrix(votes: Sequence[Sequence[int | None]]) -> LabelMatrix:
    """Queries x sources labels, None (IDK / missing) encoded as MISSING."""
    return np.array(
        [[MISSING if label is None else int(label) for label in row] for row in votes],
        dtype=np.int64,
    ).reshape(len(votes), -1)


def as_label_matrix(votes: Sequence[Sequence[int | None]] | LabelMatrix) -> LabelMatrix:
    """A 2-D int64 label matrix from nested lists (None = MISSING) or an array."""
    labels = votes if isinstance(votes, np.ndarray) else to_matrix(votes)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.ndim != 2:
        raise ValueError("votes must be a 2-D queries x sources matrix")
    return labels


def agreement_counts(
    labels: LabelMatrix, estimate: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per source: non-IDK answers, and how many of them equal the estimated answer."""
    answered = labels >= 0
    answers = answered.sum(axis=0)
    agreements = ((labels == estimate[:, None]) & answered).sum(axis=0)
    return answers, agreements


def source_results(
    accuracy: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    labels: LabelMatrix,
    scored: npt.NDArray[np.int64],
    gold: npt.NDArray[np.int64] | None = None,
) -> list[SourceReliability]:
    """One SourceReliability per column: the estimator's accuracies and weights, with the
    evidence counted against ``scored`` (the answer per query each answer is judged by) and,
    where there is gold, against the gold labels."""
    answers, agreements = agreement_counts(labels, scored)
    if gold is None:
        gold_answers = gold_agreements = np.zeros(labels.shape[1], dtype=np.int64)
    else:
        gold_answers, gold_agreements = gold_counts(labels, gold)
    return [
        SourceReliability(
            accuracy=float(accuracy[i]),
            weight=float(weights[i]),
            answers=int(answers[i]),
            agreements=int(agreements[i]),
            interval=interval_holding(wilson_interval(int(agreements[i]), int(answers[i])), float(accuracy[i])),
            gold_answers=int(gold_answers[i]),
            gold_agreements=int(gold_agreements[i]),
        )
        for i in range(labels.shape[1])
    ]


EstimatorFactory = Callable[[], Estimator]


def _is_estimator_factory(item: object) -> TypeGuard[EstimatorFactory]:
    return callable(item)


# Estimator classes (or factories) by name: ``@ESTIMATORS.register("iwmv")`` where each is
# defined; core.engine.reliability imports every built-in module.
ESTIMATORS: Registry[EstimatorFactory] = Registry("estimator", _is_estimator_factory)
