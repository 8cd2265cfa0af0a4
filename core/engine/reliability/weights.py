"""The one place where an accuracy becomes a voting weight.

Two numbers describe a source, on purpose:

- the *accuracy* w_i in [0, 1]: the estimated share of the source's non-IDK answers that
  agree with the truth (IWMV: Beta-smoothed agreement; TruthFinder: trustworthiness t(w)).
  It is what users see, and what the database stores in ``Source.reliability`` and
  ``ReliabilityScore.reliability``; the engine carries it as ``SourceInfo.accuracy``;
- the *voting weight* v_i = N * w_i - 1 (RA-RAG eq. 4, the rescaling of Li & Yu with N
  sources), floored at MIN_WEIGHT so a bad source never votes *against* a cluster. WMV and
  kappa-RRSS use it; the engine carries it as ``SourceInfo.weight`` and the database as
  ``ReliabilityScore.weight``.

A source never estimated gets the prior mean accuracy PRIOR_ACCURACY, hence a neutral weight.

Two schemes turn w_i into v_i; each estimator names the one its model implies:

- ``"paper"``: v_i = N * w_i - 1 (IWMV, TruthFinder: the reproduction of RA-RAG);
- ``"log-odds"``: v_i = max(0, ln(w_i / (1 - w_i)) + ln(K - 1)), the Bayes-optimal weight of
  weighted majority voting under the one-coin model (a source is right with probability
  w_i, else picks one of the K - 1 wrong answers uniformly); K is the number of candidate
  answers where it is known, and open-ended answers drop the ln(K - 1) term. The floor at
  zero means a source no better than chance does not vote (it never votes *against*).
  Unlike N * w_i - 1 it is not linear in w_i: one source at 0.95 outweighs several at 0.6.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

PRIOR_ACCURACY = 0.5  # mean of the Beta(1, 1) prior that IWMV smooths with
MIN_WEIGHT = 1e-3  # floor of v_i: a source with accuracy <= 1/N still votes, barely


WEIGHT_SCHEMES = ("paper", "log-odds")
MAX_ACCURACY = 1.0 - 1e-6  # keeps a log-odds weight finite
TIE_BREAK = 1e-3  # + TIE_BREAK * w: sources below chance keep an order (and kappa-RRSS a ranking)


def voting_weight(
    accuracy: float | None,
    n_sources: int,
    min_weight: float = MIN_WEIGHT,
    *,
    scheme: str = "paper",
    n_candidates: int | None = None,
) -> float:
    """v_i from the accuracy w_i (None: never estimated, the prior mean) under ``scheme``."""
    w = PRIOR_ACCURACY if accuracy is None else float(accuracy)
    if scheme == "paper":
        return max(n_sources * w - 1.0, min_weight)
    if scheme == "log-odds":
        return log_odds_weight(w, n_candidates)
    raise ValueError(f"unknown weight scheme {scheme!r}; choose one of {WEIGHT_SCHEMES}")


def log_odds_weight(accuracy: float, n_candidates: int | None = None, *, tie_break: bool = True) -> float:
    """max(0, ln(w / (1 - w)) + ln(K - 1)); open-ended (K unknown) drops the second term."""
    w = min(max(float(accuracy), 1.0 - MAX_ACCURACY), MAX_ACCURACY)
    extra = math.log(n_candidates - 1) if n_candidates is not None and n_candidates > 2 else 0.0
    return max(0.0, math.log(w / (1.0 - w)) + extra) + (TIE_BREAK * w if tie_break else 0.0)


def log_odds_weights(accuracy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """log_odds_weight over an array (open-ended answers)."""
    w = np.clip(accuracy, 1.0 - MAX_ACCURACY, MAX_ACCURACY)
    return np.maximum(np.log(w / (1.0 - w)), 0.0) + TIE_BREAK * w


def voting_weights(
    accuracy: npt.NDArray[np.float64], n_sources: int, min_weight: float = MIN_WEIGHT
) -> npt.NDArray[np.float64]:
    """voting_weight over an array of accuracies (what IWMV re-weights with every iteration)."""
    return np.maximum(n_sources * accuracy - 1.0, min_weight)
