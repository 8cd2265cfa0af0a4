"""The estimator contract: what every source-reliability estimator takes and returns.

An estimator reads a queries x sources matrix of per-query answer labels (cluster ids
>= 0; MISSING = -1 for IDK or no answer) and returns, per source, its estimated accuracy
w_i in [0, 1] with the evidence it rests on, its voting weight v_i (see
:mod:`core.engine.reliability.weights`), and the estimated answer label per query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

MISSING = -1  # matrix code for IDK / no answer

LabelMatrix = npt.NDArray[np.int64]


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


class Estimator(Protocol):
    """A source-reliability estimator, registered by name in :mod:`core.engine.reliability`."""

    @property
    def name(self) -> str:
        """The registry name (a read-only ``name: str``: a class attribute or a frozen field)."""
        ...

    def estimate(self, labels: LabelMatrix, *, prior: Prior = UNIFORM_PRIOR) -> ReliabilityResult:
        """Reliabilities (one per column, in column order) from a queries x sources matrix."""
        ...


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval; (0, 1) when there is no evidence at all."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


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
