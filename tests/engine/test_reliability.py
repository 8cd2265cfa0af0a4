from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from core.engine.reliability.base import wilson_interval
from core.engine.reliability.iwmv import iwmv

MATRIX: list[list[int | None]] = [[0, 0, 1], [0, 0, 0], [0, 1, 1], [None, 0, 0]]


def test_it_matches_a_hand_computed_case() -> None:
    # Iteration 1 (v = 1): answers 0, 0, 1, 0; agreements 2/3, 4/4, 3/4 -> v = 3w - 1.
    # Iteration 2 keeps the same answers, so the weights do not move: converged.
    result = iwmv(MATRIX, alpha=0.0, beta=0.0)
    assert result.answers == [0, 0, 1, 0]
    assert np.allclose(result.weights, [1.0, 2.0, 1.25])
    assert np.allclose(result.accuracies, [2 / 3, 1.0, 0.75])
    assert [s.answers for s in result.sources] == [3, 4, 4]
    assert result.converged and result.iterations == 2


def test_it_gives_a_source_with_only_idk_answers_the_prior() -> None:
    matrix = [row + [None] for row in MATRIX]
    result = iwmv(matrix, alpha=2.0, beta=2.0)
    silent = result.sources[3]
    assert silent.answers == 0
    assert silent.accuracy == 0.5
    assert silent.interval == (0.0, 1.0)
    assert all(np.isfinite(result.weights))


def test_it_keeps_weights_positive_for_bad_sources() -> None:
    matrix = [[0, 0, 0, 1], [1, 1, 1, 0], [2, 2, 2, 0]]
    result = iwmv(matrix, alpha=0.0, beta=0.0)
    assert result.sources[3].accuracy == 0.0
    assert min(result.weights) > 0


def test_it_recovers_reliability_order_on_a_large_matrix() -> None:
    rng = np.random.default_rng(0)
    n_queries, n_sources = 1000, 100
    truth = rng.integers(0, 4, n_queries)
    p = rng.uniform(0.2, 0.95, n_sources)
    correct = rng.random((n_queries, n_sources)) < p
    wrong = (truth[:, None] + rng.integers(1, 4, (n_queries, n_sources))) % 4
    labels = np.where(correct, truth[:, None], wrong)
    labels[rng.random((n_queries, n_sources)) < 0.4] = -1
    result = iwmv(labels)
    assert result.converged
    assert len(result.answers) == n_queries
    assert spearmanr(result.accuracies, p).statistic > 0.9
    assert np.mean(np.array(result.answers) == truth) > 0.95


def test_it_narrows_the_interval_with_more_answers() -> None:
    low, high = wilson_interval(8, 10)
    low2, high2 = wilson_interval(80, 100)
    assert high2 - low2 < high - low
    assert low < 0.8 < high
