"""The estimator contract: every registered estimator, on the same synthetic matrices."""

from __future__ import annotations

import numpy as np
import pytest

from core.engine.reliability import (
    ESTIMATORS as ESTIMATOR_REGISTRY,
)
from core.engine.reliability import (
    MISSING,
    UNIFORM_PRIOR,
    Estimator,
    Prior,
    ReliabilityResult,
    available_estimators,
    get_estimator,
)
from core.engine.reliability.iwmv import IWMV, iwmv
from core.engine.reliability.weights import voting_weight

ESTIMATORS = available_estimators()


def _synthetic(n_queries: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Source 0 is right 95% of the time, source 4 5%; the others in between; 30% IDK."""
    rng = np.random.default_rng(seed)
    p = np.array([0.95, 0.8, 0.7, 0.6, 0.05])
    truth = rng.integers(0, 3, n_queries)
    correct = rng.random((n_queries, p.size)) < p
    wrong = (truth[:, None] + rng.integers(1, 3, (n_queries, p.size))) % 3
    labels = np.where(correct, truth[:, None], wrong)
    labels[rng.random(labels.shape) < 0.3] = MISSING
    return labels.astype(np.int64), truth


def test_the_builtin_estimators_are_registered() -> None:
    assert {"iwmv", "truthfinder"} <= set(ESTIMATORS)
    assert available_estimators() == sorted(ESTIMATORS)


def test_an_unknown_estimator_name_lists_the_available_ones() -> None:
    with pytest.raises(KeyError, match="available: .*iwmv.*truthfinder"):
        get_estimator("no-such-estimator")


def test_a_name_cannot_be_registered_twice_with_another_factory() -> None:
    with pytest.raises(ValueError, match="already registered"):
        ESTIMATOR_REGISTRY.register("iwmv")(lambda: IWMV(tol=1e-3))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_it_returns_one_reliability_per_source_and_one_answer_per_query(name: str) -> None:
    labels, _truth = _synthetic()
    estimator: Estimator = get_estimator(name)
    result = estimator.estimate(labels, prior=UNIFORM_PRIOR)
    assert estimator.name == name
    assert isinstance(result, ReliabilityResult)
    assert len(result.sources) == labels.shape[1]
    assert len(result.answers) == labels.shape[0]
    assert result.iterations >= 1
    for column, source in enumerate(result.sources):
        assert 0.0 <= source.accuracy <= 1.0
        assert source.weight >= 0  # log-odds weights floor at zero; N*w - 1 at a small positive
        assert source.answers == int((labels[:, column] != MISSING).sum())
        assert 0 <= source.agreements <= source.answers
        low, high = source.interval
        assert 0.0 <= low <= high <= 1.0


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_clearly_reliable_source_outranks_a_clearly_unreliable_one(name: str) -> None:
    labels, truth = _synthetic()
    result = get_estimator(name).estimate(labels, prior=UNIFORM_PRIOR)
    accuracy = result.accuracies
    assert accuracy[0] > accuracy[4]
    assert result.weights[0] > result.weights[4]
    assert np.argmin(accuracy) == 4
    answered = [i for i, a in enumerate(result.answers) if a is not None]
    assert np.mean([result.answers[i] == truth[i] for i in answered]) > 0.75  # chance: 1/3


@pytest.mark.parametrize("name", ESTIMATORS)
def test_missing_answers_leave_a_query_unanswered_and_a_silent_source_at_the_prior(name: str) -> None:
    labels = np.array(
        [[0, 0, 1, MISSING], [1, 1, 1, MISSING], [MISSING, MISSING, MISSING, MISSING], [2, 2, 0, MISSING]]
    )
    prior = Prior(2.0, 2.0)
    result = get_estimator(name).estimate(labels, prior=prior)
    assert result.answers[2] is None
    assert result.answers[0] == 0 and result.answers[1] == 1
    silent = result.sources[3]
    assert silent.answers == 0 and silent.agreements == 0
    assert silent.accuracy == pytest.approx(prior.mean)
    assert silent.interval == (0.0, 1.0)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_all_idk_matrix_gives_every_source_the_prior_without_crashing(name: str) -> None:
    labels = np.full((5, 3), MISSING, dtype=np.int64)
    result = get_estimator(name).estimate(labels, prior=UNIFORM_PRIOR)
    assert result.answers == [None] * 5
    assert result.accuracies == pytest.approx([0.5] * 3)
    scheme = get_estimator(name).weight_scheme
    assert result.weights == pytest.approx([voting_weight(0.5, 3, scheme=scheme)] * 3)
    assert all(np.isfinite(result.weights))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_empty_matrix_gives_an_empty_result(name: str) -> None:
    result = get_estimator(name).estimate(np.zeros((0, 0), dtype=np.int64), prior=UNIFORM_PRIOR)
    assert result.sources == [] and result.answers == []


def test_the_iwmv_estimator_is_the_iwmv_function_with_the_prior() -> None:
    labels, _truth = _synthetic(seed=3)
    via_registry = get_estimator("iwmv").estimate(labels, prior=Prior(2.0, 3.0))
    assert via_registry == iwmv(labels, alpha=2.0, beta=3.0)
