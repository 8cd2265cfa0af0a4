"""CrEst credibility: the triplet closed forms on hand-computed moments, the per-document
estimate in embedding space, the ensemble's standardisation and averaging, the degenerate
cases and the label binning."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from core.engine import credibility as cred
from core.engine.credibility import (
    FEWER_THAN_THREE,
    IDENTICAL,
    LexicalEmbedder,
    agreement_scores,
    credibility_label,
    distance_scores,
    ensemble_credibility,
    ensemble_embedders,
    estimate_credibility,
    expected_errors,
    squared_distances,
    standardise,
    triplet_accuracies,
    triplet_errors,
)
from tests.fakes import HashEmbedder


def _vectors_with_cosines(cosines: list[list[float]]) -> np.ndarray:
    """Unit vectors whose pairwise cosines are the given (positive definite) Gram matrix."""
    return np.linalg.cholesky(np.array(cosines))


def _noisy_copies(noise: list[float], dim: int = 16) -> np.ndarray:
    """Documents y + s_i u_i with orthonormal noise directions u_i orthogonal to the truth y."""
    basis = np.eye(dim)
    truth = basis[0]
    return np.array([truth + s * basis[i + 1] for i, s in enumerate(noise)])


def test_fu_triplet_recovers_known_accuracies_from_agreement_moments() -> None:
    # Labelers with accuracies 0.9, 0.8, 0.5 and independent errors: E[l_i l_j] = a_i a_j.
    accuracies = triplet_accuracies(0.9 * 0.8, 0.9 * 0.5, 0.8 * 0.5)
    assert accuracies is not None
    assert accuracies == pytest.approx((0.9, 0.8, 0.5))


def test_fu_triplet_uses_magnitudes_and_caps_accuracies_at_one() -> None:
    assert triplet_accuracies(-0.72, 0.45, -0.40) == pytest.approx((0.9, 0.8, 0.5))
    # Noisy moments can imply an accuracy above 1: it is capped.
    assert triplet_accuracies(0.9, 0.9, 0.5) == pytest.approx((1.0, math.sqrt(0.5), math.sqrt(0.5)))


def test_fu_triplet_refuses_a_near_zero_denominator() -> None:
    assert triplet_accuracies(0.72, 0.45, 1e-5) is None
    assert triplet_accuracies(0.72, 0.45, 0.01, min_denominator=0.1) is None
    with pytest.raises(ValueError, match="finite"):
        triplet_accuracies(float("nan"), 0.5, 0.5)


def test_crest_triplet_recovers_each_documents_distance_to_the_truth() -> None:
    # E[d(i,y)] = 0.1, 0.2, 0.5 and E[d(i,j)] = E[d(i,y)] + E[d(j,y)].
    assert triplet_errors(0.3, 0.6, 0.7) == pytest.approx((0.1, 0.2, 0.5))


def test_expected_errors_average_every_triplet_of_a_larger_set() -> None:
    errors = np.array([0.1, 0.2, 0.3, 0.9, 0.4])
    distances = errors[:, None] + errors[None, :]
    np.fill_diagonal(distances, 0.0)
    assert expected_errors(distances) == pytest.approx(errors)
    # The closed form equals the explicit mean over every pair of other documents.
    i = 3
    explicit = [
        triplet_errors(distances[i, j], distances[i, k], distances[j, k])[0]
        for j in range(5)
        for k in range(j + 1, 5)
        if i not in (j, k)
    ]
    assert expected_errors(distances)[i] == pytest.approx(np.mean(explicit))


def test_squared_distances_are_two_minus_twice_the_cosine_of_the_normalised_vectors() -> None:
    vectors = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    distances = squared_distances(vectors)
    assert distances[0, 1] == pytest.approx(2.0)
    assert distances[0, 2] == pytest.approx(2.0 - 2.0 / math.sqrt(2.0))
    assert np.all(np.diag(distances) == 0.0)


def test_documents_closer_to_the_truth_are_more_credible() -> None:
    scores = distance_scores(_noisy_copies([0.2, 0.5, 0.3, 1.5]))
    assert scores is not None
    assert list(np.argsort(-scores)) == [0, 2, 1, 3]


def test_the_outlier_among_agreeing_documents_is_labelled_low() -> None:
    estimate = ensemble_credibility([("noisy", _noisy_copies([0.2, 0.22, 0.24, 0.2, 3.0]))])
    assert estimate.fallback is None
    assert estimate.labels()[:4] == ["high"] * 4
    assert estimate.labels()[4] == "low"


def test_agreement_form_recovers_fu_accuracies_from_cosine_moments() -> None:
    vectors = _vectors_with_cosines([[1.0, 0.72, 0.45], [0.72, 1.0, 0.40], [0.45, 0.40, 1.0]])
    scores = agreement_scores(vectors)
    assert scores is not None
    assert scores == pytest.approx([0.9, 0.8, 0.5])
    estimate = ensemble_credibility([("gram", vectors)], method="agreement")
    assert estimate.scores == pytest.approx((1.0, 0.8 / 0.9, 0.5 / 0.9))


def test_agreement_form_skips_ill_conditioned_triplets_and_gives_their_document_the_mean() -> None:
    # Documents 1 and 2 are orthogonal: document 0's only triplet divides by ~0.
    vectors = _vectors_with_cosines([[1.0, 0.6, 0.6], [0.6, 1.0, 0.0], [0.6, 0.0, 1.0]])
    scores = agreement_scores(vectors)
    assert scores is not None
    assert scores[1] == pytest.approx(scores[2])
    assert scores[0] == pytest.approx((scores[1] + scores[2]) / 2)


def test_standardise_divides_by_the_largest_score_so_agreeing_documents_stay_near_one() -> None:
    assert standardise(np.array([2.0, 1.0, 0.5])) == pytest.approx([1.0, 0.5, 0.25])
    assert standardise(np.array([5.0, 4.9, 4.95])) == pytest.approx([1.0, 0.98, 0.99])
    assert standardise(np.array([0.0, 0.0])) == pytest.approx([1.0, 1.0])


def test_the_ensemble_standardises_each_embedder_then_averages() -> None:
    first = _noisy_copies([0.2, 0.6, 0.4, 1.0])
    second = _noisy_copies([0.6, 0.2, 0.4, 1.0]) * 50.0  # a different scale must not dominate
    estimate = ensemble_credibility([("a", first), ("b", second)])
    a, b = np.array(estimate.per_embedder["a"]), np.array(estimate.per_embedder["b"])
    assert max(a) == pytest.approx(1.0) and max(b) == pytest.approx(1.0)
    assert np.argmax(a) == 0 and np.argmax(b) == 1
    assert estimate.scores == pytest.approx(tuple((a + b) / 2))
    assert estimate.scores[3] == min(estimate.scores)


def test_fewer_than_three_documents_are_all_fully_credible() -> None:
    two = ensemble_credibility([("a", np.eye(2))])
    assert two.scores == (1.0, 1.0) and two.fallback == FEWER_THAN_THREE
    assert estimate_credibility(["only one"], [HashEmbedder()]).scores == (1.0,)
    empty = estimate_credibility([], [HashEmbedder()])
    assert empty.scores == () and empty.fallback is None


def test_identical_documents_are_all_fully_credible() -> None:
    same = np.tile(np.array([[0.6, 0.8]]), (4, 1))
    estimate = ensemble_credibility([("a", same)])
    assert estimate.scores == (1.0, 1.0, 1.0, 1.0) and estimate.fallback == IDENTICAL
    assert ensemble_credibility([("a", same)], method="agreement").fallback == IDENTICAL


def test_a_degenerate_embedder_counts_as_neutral_in_the_average() -> None:
    same = np.tile(np.array([[1.0, 0.0, 0.0]]), (3, 1))
    varied = _noisy_copies([0.1, 0.2, 2.0])
    estimate = ensemble_credibility([("blind", same), ("sharp", varied)])
    assert estimate.fallback is None
    assert estimate.per_embedder["blind"] == (1.0, 1.0, 1.0)
    assert estimate.scores == pytest.approx(tuple((1.0 + s) / 2 for s in estimate.per_embedder["sharp"]))


def test_a_near_duplicate_pair_is_floored_instead_of_infinitely_credible() -> None:
    # Two identical documents and one other: E[d] of the pair is 0 (the floor), the other x.
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    scores = distance_scores(vectors)
    assert scores is not None and np.all(np.isfinite(scores))
    # floor = 0.1 * mean pairwise distance / 2 = 0.1 * (2x/3) / 2 = x/30: a ratio of 1/30.
    assert standardise(scores) == pytest.approx([1.0, 1.0, 1.0 / 30.0])


def test_bad_vectors_are_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="finite"):
        distance_scores(np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="same documents"):
        ensemble_credibility([("a", np.eye(3)), ("b", np.eye(4))])
    with pytest.raises(ValueError, match="unknown credibility method"):
        ensemble_credibility([("a", np.eye(3))], method="vibes")  # type: ignore[arg-type]


def test_labels_use_fixed_cut_points_at_one_and_two_thirds() -> None:
    assert [credibility_label(s) for s in (1.0, 2 / 3, 0.66, 1 / 3, 0.33, 0.0)] == [
        "high",
        "high",
        "medium",
        "medium",
        "low",
        "low",
    ]
    with pytest.raises(ValueError):
        credibility_label(float("nan"))


def test_the_lexical_embedder_is_deterministic_unit_length_and_sees_shared_words() -> None:
    embedder = LexicalEmbedder()
    texts = ["Elvis Presley recorded the song", "the song was recorded by Elvis Presley", "Chicago Fire season four"]
    vectors = embedder.encode(texts)
    assert np.allclose(vectors, LexicalEmbedder().encode(texts))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_estimate_credibility_ranks_the_odd_passage_last_and_counts_a_shared_name_once() -> None:
    texts = [
        "Elvis Presley recorded I Can't Help Falling in Love with You in 1961.",
        "I Can't Help Falling in Love with You was recorded by Elvis Presley in 1961.",
        "Elvis Presley first recorded I Can't Help Falling in Love with You for Blue Hawaii in 1961.",
        "The Chicago Fire fourth season has twenty three episodes.",
    ]
    estimate = estimate_credibility(texts, [HashEmbedder(), HashEmbedder(), LexicalEmbedder()])
    assert set(estimate.per_embedder) == {"hash-64", "lexical-hash-512"}
    assert min(range(4), key=lambda i: estimate.scores[i]) == 3
    assert estimate.labels()[3] == "low"


@pytest.fixture
def no_extra_embedders() -> Iterator[None]:
    saved = dict(cred._EXTRA_EMBEDDERS)
    cred._EXTRA_EMBEDDERS.clear()
    try:
        yield
    finally:
        cred._EXTRA_EMBEDDERS.clear()
        cred._EXTRA_EMBEDDERS.update(saved)


def test_ensembles_name_their_embedders_and_all_adds_the_registered_extras(no_extra_embedders: None) -> None:
    primary = HashEmbedder()
    assert ensemble_embedders(primary, "context") == [primary]
    assert [e.name for e in ensemble_embedders(primary, "context+lexical")] == ["hash-64", "lexical-hash-512"]
    extra = LexicalEmbedder(dimension=64)
    extra.name = "extra"
    cred.register_ensemble_embedder("extra", lambda: extra)
    assert [e.name for e in ensemble_embedders(primary, "all")] == ["hash-64", "lexical-hash-512", "extra"]
    with pytest.raises(ValueError, match="unknown ensemble"):
        ensemble_embedders(primary, "everything")
