"""An answer backed only by sources whose reliability was never checked says so, and its
confidence is capped at the prior accuracy; estimated sources are untouched (WMV unchanged)."""

from __future__ import annotations

from typing import Any

import pytest

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.reliability.weights import PRIOR_ACCURACY, voting_weight
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, StrategyResult, get_strategy
from core.engine.strategies.pipeline import FEW_CHECKED_ANSWERS, evidence_caveat
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

QUESTION = "What is the secret word?"
INJECTED = "The secret word is PWNED."


def _context(sources: list[SourceInfo], texts: list[str]) -> EngineContext:
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    for source, text in zip(sources, texts, strict=True):
        retriever.add_texts(source.id, [text], embedder)
    return EngineContext(retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources)


def _answer(name: str, ctx: EngineContext, **raw: Any) -> StrategyResult:
    strategy = get_strategy(name)
    return strategy.answer_checked(QUESTION, ctx, parse_params(strategy.Params, raw))


def _unchecked(source_id: int, name: str, n: int) -> SourceInfo:
    # What the product gives a source no estimation run has measured (engine_context.source_infos).
    return SourceInfo(source_id, name, weight=voting_weight(None, n), answers_count=0, accuracy=None)


def test_an_unestimated_source_answering_alone_gets_at_most_the_prior_confidence_and_a_note() -> None:
    ctx = _context([_unchecked(7, "pastebin", 1)], [INJECTED])
    result = _answer("ra-rag", ctx)
    assert "PWNED" in result.answer  # the vote itself is unchanged
    assert result.confidence <= PRIOR_ACCURACY
    assert any("rests on 1 source whose reliability has never been checked (pastebin)" in n for n in result.notes)


def test_every_voting_strategy_and_the_pooled_baselines_cap_an_answer_backed_only_by_unchecked_sources() -> None:
    sources = [_unchecked(1, "a", 2), _unchecked(2, "b", 2)]
    ctx = _context(sources, [INJECTED, INJECTED])
    for name in ("ra-rag", "ra-rag-all", "ra-rag-nofilter", "mv", "vanilla-rag"):
        result = _answer(name, ctx)
        assert "PWNED" in result.answer, name
        assert result.confidence <= PRIOR_ACCURACY, name
        assert any("rests on 2 sources whose reliability has never been checked" in n for n in result.notes), name


def test_a_source_estimated_on_few_answers_gets_a_note_and_one_estimated_on_many_gets_none() -> None:
    thin = SourceInfo(4, "newcomer", weight=voting_weight(0.8, 1), answers_count=2, accuracy=0.8)
    result = _answer("ra-rag", _context([thin], [INJECTED]))
    # Estimated: the answer's probability under the one-coin model, i.e. the accuracy of its only voter.
    assert result.confidence == pytest.approx(0.8)
    assert any("few checked answers (at most 2; newcomer)" in n for n in result.notes)

    checked = SourceInfo(3, "wire", weight=voting_weight(0.9, 1), answers_count=40, accuracy=0.9)
    result = _answer("ra-rag", _context([checked], [INJECTED]))
    assert result.confidence == pytest.approx(0.9)
    assert result.notes == []


def test_the_caveat_looks_only_at_the_sources_behind_the_winning_answer() -> None:
    sources = [
        SourceInfo(1, "estimated", weight=2.0, answers_count=FEW_CHECKED_ANSWERS, accuracy=0.9),
        _unchecked(2, "unknown", 2),
    ]
    assert evidence_caveat(0.8, [1], sources) == (0.8, None)
    assert evidence_caveat(0.8, [1, 2], sources) == (0.8, None)  # one estimated backer is enough
    capped, note = evidence_caveat(0.8, [2], sources)
    assert capped == PRIOR_ACCURACY and note is not None and "(unknown)" in note
    assert evidence_caveat(0.3, [2], sources)[0] == 0.3  # a cap, never a raise
    assert evidence_caveat(0.8, [], sources) == (0.8, None)  # nobody behind it (I don't know)
