"""Calibrating answer probabilities on checked answers (core.engine.steps.calibration)."""

from __future__ import annotations

import random

import pytest

from core.engine.steps.calibration import (
    IDENTITY,
    Calibration,
    checked_examples,
    expected_calibration_error,
    fit,
)


def overconfident(n: int, seed: int = 0) -> list[tuple[float, bool]]:
    """Answers that say 0.95 and are right 70% of the time, and say 0.6 and are right 55%."""
    rng = random.Random(seed)
    return [(0.95, rng.random() < 0.70) for _ in range(n)] + [(0.6, rng.random() < 0.55) for _ in range(n)]


def test_without_checked_answers_the_probability_is_left_as_it_is() -> None:
    assert fit([]) == IDENTITY
    assert not IDENTITY.fitted
    assert IDENTITY.apply(0.93) == 0.93


def test_an_overconfident_model_is_brought_down_to_how_often_it_is_right() -> None:
    examples = overconfident(400)
    calibration = fit(examples, queries=80)
    assert calibration.fitted and calibration.queries == 80 and calibration.examples == 800
    assert calibration.apply(0.95) == pytest.approx(0.70, abs=0.05)
    assert calibration.apply(0.6) == pytest.approx(0.55, abs=0.06)
    assert calibration.ece_before is not None and calibration.ece_after is not None
    assert calibration.ece_after < calibration.ece_before / 3
    # Fitted on one sample, it holds on another drawn the same way.
    fresh = overconfident(400, seed=1)
    before = expected_calibration_error([p for p, _ in fresh], [r for _, r in fresh])
    after = expected_calibration_error([calibration.apply(p) for p, _ in fresh], [r for _, r in fresh])
    assert after < before / 2


def test_a_few_checked_answers_move_the_map_only_a_little() -> None:
    few = fit([(0.95, False), (0.9, False)], queries=1)
    many = fit([(0.95, False), (0.9, False)] * 100, queries=100)
    assert 0.5 < few.apply(0.95) < 0.95  # the prior around the identity holds it
    assert many.apply(0.95) < few.apply(0.95)


def test_the_map_keeps_the_order_of_confidences_and_no_answer_keeps_zero() -> None:
    calibration = fit(overconfident(200))
    values = [calibration.apply(p) for p in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)]
    assert values == sorted(values)
    assert calibration.apply(0.0) == 0.0
    # Confidence that says the opposite of being right is flattened, never inverted.
    inverted = fit([(0.95, False)] * 200 + [(0.2, True)] * 200)
    assert inverted.slope == 0.0
    assert inverted.apply(0.95) == pytest.approx(inverted.apply(0.2))


def test_a_calibration_survives_its_round_trip_through_json_and_bad_json_is_the_identity() -> None:
    calibration = fit(overconfident(50), queries=10)
    assert Calibration.from_dict(calibration.as_dict()) == calibration
    assert Calibration.from_dict(None) == IDENTITY
    assert Calibration.from_dict({"slope": "x", "intercept": 0}) == IDENTITY
    assert Calibration.from_dict({"intercept": 0.0}) == IDENTITY


def test_checked_examples_vote_subsets_and_score_them_against_the_checked_cluster() -> None:
    # Three sources: two reliable ones say cluster 0, a bad one says 1; query 1 has no right
    # answer among the clusters; query 2 was not checked; the reliable ones skip query 3.
    matrix: list[list[int | None]] = [[0, 0, 1], [0, 0, 1], [1, 1, 0], [None, None, 1]]
    accuracies = [0.9, 0.8, 0.2]
    weights = [2.2, 1.4, 0.0]
    examples = checked_examples(matrix, {0: 0, 1: None, 3: 0}, accuracies, weights, kappa=2, random_subsets=4)
    # Per checked query: the two most accurate sources, then 4 drawn subsets.
    assert len(examples) == 15
    first = examples[:5]
    assert all(right for _, right in first[:1])  # the two reliable sources agree on the right answer
    assert first[0][0] > 0.9
    assert not any(right for _, right in examples[5:10])  # no cluster was right on query 1
    # On query 3 only the unreliable source answered: wrong, and no more likely right than not.
    assert all(not right and p <= 0.5 for p, right in examples[10:])


def test_an_answer_carries_the_calibrated_probability_of_its_context() -> None:
    from core.engine.backends.generation import ExtractiveReader
    from core.engine.backends.nli import EmbeddingLexicalNLI
    from core.engine.params import parse_params
    from core.engine.steps.memory_retriever import InMemoryRetriever
    from core.engine.strategies import EngineContext, get_strategy
    from core.engine.types import SourceInfo
    from tests.fakes import HashEmbedder

    question = "who recorded i can't help falling in love with you"
    text = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."

    def answer(calibration: Calibration) -> tuple[str, float]:
        embedder = HashEmbedder()
        retriever = InMemoryRetriever()
        sources = []
        for i in range(3):
            retriever.add_texts(i, [text], embedder)
            sources.append(SourceInfo(i, f"source {i}", weight=2.0, answers_count=20, accuracy=0.9))
        ctx = EngineContext(
            retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources, calibration=calibration
        )
        strategy = get_strategy("ra-rag")
        result = strategy.answer_checked(question, ctx, parse_params(strategy.Params, {}))
        return result.answer, result.confidence

    raw_answer, raw = answer(IDENTITY)
    humbled = Calibration(slope=0.3, intercept=-0.5, queries=20, examples=180)
    calibrated_answer, calibrated = answer(humbled)
    assert raw_answer == calibrated_answer and "Elvis" in raw_answer
    assert raw > 0.99  # three agreeing sources at 0.9, as if independent
    assert calibrated == pytest.approx(humbled.apply(raw)) and calibrated < raw - 0.1
