from __future__ import annotations

from collections.abc import Sequence

import pytest

from core.engine.backends.generation import ExtractiveReader, Generation, GenerationRequest
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.estimation import answer_pairs, estimate, estimate_from_records
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

QUESTIONS = [
    ("who recorded i can't help falling in love with you", "Elvis Presley", "Frank Sinatra"),
    ("who wrote the theme song for mission impossible", "Lalo Schifrin", "John Williams"),
    ("who painted the last supper", "Leonardo da Vinci", "Pablo Picasso"),
    ("who founded the microsoft company", "Bill Gates", "Steve Jobs"),
]


def _statement(question: str, answer: str) -> str:
    return f"{answer} {question.split(' ', 1)[1]}."


def _context() -> EngineContext:
    # Sources 0-2 state the true answers, source 3 always the false one, source 4 is empty.
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    for sid in range(4):
        texts = [_statement(q, false if sid == 3 else true) for q, true, false in QUESTIONS]
        retriever.add_texts(sid, texts, embedder)
    sources = [SourceInfo(i, f"s{i}") for i in range(5)]
    return EngineContext(retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources)


def test_it_ranks_the_lying_and_silent_sources_below_the_truthful_ones() -> None:
    result = estimate([q for q, _, _ in QUESTIONS], _context())
    weights = result.by_source()
    assert min(weights[0], weights[1], weights[2]) > weights[3]
    assert result.reliability.sources[4].answers == 0
    assert result.reliability.sources[3].agreements == 0
    # Source 4 is empty: nothing about the questions, so it is never asked (steps.relevance).
    assert result.stats.calls == len(QUESTIONS) * 4


def test_it_estimates_incrementally_from_stored_responses() -> None:
    ctx = _context()
    questions = [q for q, _, _ in QUESTIONS]
    pairs = [(q, s) for q in range(len(questions)) for s in range(5)]
    first = answer_pairs(questions, pairs[:7], ctx)
    second = answer_pairs(questions, pairs[7:], ctx)
    assert [(r.query_index, r.source_id) for r in first + second] == pairs
    reliability, records = estimate_from_records(questions, list(range(5)), first + second, ctx.nli)
    whole = estimate(questions, ctx)
    assert reliability.weights == whole.reliability.weights
    assert all(r.cluster is None for r in records if r.source_id == 4)


def test_it_estimates_with_truthfinder_when_asked_by_name() -> None:
    result = estimate([q for q, _, _ in QUESTIONS], _context(), estimator="truthfinder")
    accuracy = {sid: s.accuracy for sid, s in zip(result.source_ids, result.reliability.sources, strict=True)}
    assert min(accuracy[0], accuracy[1], accuracy[2]) > accuracy[3]
    assert result.reliability.sources[3].agreements == 0
    assert result.reliability.sources[4].answers == 0
    assert accuracy[4] == 0.5  # never answered: the prior mean


def test_an_unknown_estimator_fails_before_any_generator_call() -> None:
    ctx = _context()
    before = ctx.generator.generate
    asked: list[object] = []

    def spy(requests: Sequence[GenerationRequest]) -> list[Generation]:
        asked.extend(requests)
        return before(requests)

    ctx.generator.generate = spy  # type: ignore[method-assign]
    with pytest.raises(KeyError, match="unknown estimator 'majority'; available: .*iwmv.*truthfinder"):
        estimate([q for q, _, _ in QUESTIONS], ctx, estimator="majority")
    assert asked == []
