"""A log-odds estimate weighs a vote by how many answers the question has to choose from:
a source right less than half the time still counts where it beats chance (1 / K)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.estimation import answer_candidates
from core.engine.params import parse_params
from core.engine.reliability import get_estimator
from core.engine.reliability.weights import log_odds_weight
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.steps.voting import candidate_count, candidate_weights
from core.engine.strategies import EngineContext, StrategyResult, get_strategy
from core.engine.strategies.base import SourceVote
from core.engine.strategies.pipeline import cluster_and_vote
from core.engine.text import answer_contains_gold
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

QUESTION = "who recorded i can't help falling in love with you"
TRUE = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."
FALSE = "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970."


def test_a_question_has_its_distinct_answers_plus_none_of_them_as_candidates() -> None:
    assert answer_candidates([[0, 0, 1], [None, None, None], [2, None, 2], [0, 1, 2]]) == [3, None, 2, 4]
    assert candidate_count([0, None, 1, 1]) == 3
    assert candidate_count([None, None]) == 1


def test_a_source_below_one_half_votes_once_the_question_has_several_candidates() -> None:
    # Three answers given: K = 4, so 0.4 beats chance (0.25): ln(0.4 / 0.6) + ln(3) > 0.
    weights = candidate_weights([0, 1, 2], [0.4, 0.4, None], [log_odds_weight(0.4), 0.7, 0.3])
    assert weights[0] == pytest.approx(math.log(0.4 / 0.6) + math.log(3) + 1e-3 * 0.4)
    assert weights[1] == pytest.approx(0.7)  # never below the weight it came with (an explored source)
    assert weights[2] == 0.3  # never estimated: keeps its weight
    # Everyone agrees: K = 2, and below one half a source still does not vote.
    assert candidate_weights([0, 0], [0.4, 0.4], [0.0, 0.0]) == pytest.approx([4e-4, 4e-4])


def _mediocre_matrix(seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[float]]:
    """200 open questions, 7 sources right 35-65% of the time, wrong answers spread over 12 values."""
    rng = np.random.default_rng(seed)
    accuracy = [0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65]
    truth = np.zeros(200, dtype=np.int64)
    labels = np.where(
        rng.random((200, len(accuracy))) < np.array(accuracy), 0, rng.integers(1, 13, size=(200, len(accuracy)))
    )
    return labels, truth, accuracy


@pytest.mark.parametrize("name", ["onecoin", "accucopy"])
def test_knowing_the_candidates_recovers_mediocre_sources_that_an_open_model_writes_off(name: str) -> None:
    labels, truth, accuracy = _mediocre_matrix(seed=3)
    candidates = answer_candidates(labels.tolist())
    estimator = get_estimator(name)
    open_ended = estimator.estimate(labels)
    known = estimator.estimate(labels, candidates=candidates)

    def right(result: Any) -> float:
        return float(np.mean([a == t for a, t in zip(result.answers, truth, strict=True)]))

    def pearson(result: Any) -> float:
        return float(np.corrcoef(result.accuracies, accuracy)[0, 1])

    # Measured: 0.71 -> 0.89 of the answers right, Pearson 0.77 -> 0.95.
    assert right(known) >= right(open_ended) + 0.1
    assert pearson(known) > 0.9 > pearson(open_ended)
    # The open model writes every source below one half off, and crowns one of the others
    # (estimated 1.0, truly 0.65); knowing K keeps each estimate near its truth.
    assert max(open_ended.accuracies) > 0.95
    assert max(abs(a - p) for a, p in zip(known.accuracies, accuracy, strict=True)) < 0.15


def test_iwmv_and_truthfinder_take_the_candidates_and_ignore_them() -> None:
    labels, _, _ = _mediocre_matrix(seed=4)
    candidates = answer_candidates(labels.tolist())
    for name in ("iwmv", "truthfinder"):
        estimator = get_estimator(name)
        assert estimator.estimate(labels, candidates=candidates).accuracies == estimator.estimate(labels).accuracies


def _context(accuracies: list[float], texts: list[str], scheme: str) -> EngineContext:
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    sources = []
    for i, (accuracy, text) in enumerate(zip(accuracies, texts, strict=True)):
        retriever.add_texts(i, [text], embedder)
        sources.append(
            SourceInfo(i, f"source {i}", weight=log_odds_weight(accuracy), answers_count=50, accuracy=accuracy)
        )
    return EngineContext(
        retriever,
        embedder,
        ExtractiveReader(),
        EmbeddingLexicalNLI(embedder),
        sources,
        oracle={0: 0.9, 1: 0.9, 2: 0.9, 3: 0.1},
        weight_scheme=scheme,
    )


def _answer(name: str, ctx: EngineContext) -> StrategyResult:
    strategy = get_strategy(name)
    return strategy.answer_checked(
        QUESTION, ctx, parse_params(strategy.Params, {"kappa": 4} if name == "ra-rag" else {})
    )


def test_three_sources_at_0_45_outvote_one_at_0_55_on_a_question_with_two_answers() -> None:
    texts = [TRUE, TRUE, TRUE, FALSE]
    accuracies = [0.45, 0.45, 0.45, 0.55]
    # K = 3: each 0.45 vote weighs ln(0.45 / 0.55) + ln 2 = 0.49, the 0.55 one 0.89.
    by_candidates = _answer("ra-rag", _context(accuracies, texts, "log-odds"))
    assert answer_contains_gold(by_candidates.answer, "Elvis Presley")
    assert sorted(round(v.weight, 2) for v in by_candidates.votes) == [0.49, 0.49, 0.49, 0.89]
    # Open-ended weights (the "paper" scheme keeps the weights it is given): 0.55 alone votes.
    as_given = _answer("ra-rag", _context(accuracies, texts, "paper"))
    assert answer_contains_gold(as_given.answer, "Frank Sinatra")
    # Majority vote and the oracle keep their own weights whatever the estimator's scheme.
    oracle = _answer("wmv-oracle", _context([0.55, 0.55, 0.55, 0.45], [FALSE, FALSE, FALSE, TRUE], "log-odds"))
    assert {v.weight for v in oracle.votes} == {0.9, 0.1}


def test_a_vote_scaled_by_passage_credibility_keeps_its_scale() -> None:
    ctx = _context([0.45, 0.45], [TRUE, FALSE], "log-odds")
    votes = [
        SourceVote(0, "source 0", TRUE, TRUE, False, 1.0, None, 0.5 * log_odds_weight(0.45), [], factor=0.5),
        SourceVote(1, "source 1", FALSE, FALSE, False, 1.0, None, log_odds_weight(0.45), [], factor=1.0),
    ]
    cluster_and_vote(QUESTION, ctx, votes)
    # K = 3: the candidate weight, times the credibility factor the vote came with.
    assert votes[0].weight == pytest.approx(0.5 * log_odds_weight(0.45, 3))
    assert votes[1].weight == pytest.approx(log_odds_weight(0.45, 3))
