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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

PRIOR_ACCURACY = 0.5  # mean of the Beta(1, 1) prior that IWMV smooths with
MIN_WEIGHT = 1e-3  # floor of v_i: a source with accuracy <= 1/N still votes, barely


def voting_weight(accuracy: float | None, n_sources: int, min_weight: float = MIN_WEIGHT) -> float:
    """v_i = max(N * w_i - 1, MIN_WEIGHT) from the accuracy w_i (None: never estimated)."""
    w = PRIOR_ACCURACY if accuracy is None else float(accuracy)
    return max(n_sources * w - 1.0, min_weight)


def voting_weights(
    accuracy: npt.NDArray[np.float64], n_sources: int, min_weight: float = MIN_WEIGHT
) -> npt.NDArray[np.float64]:
    """voting_weight over an array of accuracies (what IWMV re-weights with every iteration)."""
    return np.maximum(n_sources * accuracy - 1.0, min_weight)
