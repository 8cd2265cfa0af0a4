from __future__ import annotations

import numpy as np
import pytest

from core.engine.reliability.weights import MIN_WEIGHT, PRIOR_ACCURACY, voting_weight, voting_weights


def test_the_voting_weight_is_n_times_the_accuracy_minus_one() -> None:
    assert voting_weight(0.9, 10) == pytest.approx(8.0)
    assert voting_weight(1.0, 3) == pytest.approx(2.0)


def test_a_source_no_better_than_one_in_n_still_votes_with_the_floor_weight() -> None:
    assert voting_weight(0.1, 10) == MIN_WEIGHT
    assert voting_weight(0.0, 10) == MIN_WEIGHT
    assert voting_weight(0.05, 10, min_weight=0.5) == 0.5


def test_a_never_estimated_source_gets_the_prior_mean_accuracy() -> None:
    assert PRIOR_ACCURACY == 0.5
    assert voting_weight(None, 9) == voting_weight(PRIOR_ACCURACY, 9) == pytest.approx(3.5)


def test_more_accurate_sources_always_weigh_more_above_the_floor() -> None:
    weights = [voting_weight(w, 9) for w in (0.2, 0.4, 0.6, 0.8, 1.0)]
    assert weights == sorted(weights)
    assert len(set(weights)) == len(weights)


def test_the_vectorised_weights_match_the_scalar_ones_exactly() -> None:
    accuracy = np.array([0.0, 0.1, 1 / 3, 0.5, 0.77, 1.0])
    assert voting_weights(accuracy, 7).tolist() == [voting_weight(float(w), 7) for w in accuracy]
