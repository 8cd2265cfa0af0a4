from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import ParamError, parse_assignments, parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.steps.relevance import on_topic
from core.engine.strategies import (
    EngineContext,
    StrategyResult,
    StrategyUnavailable,
    available_strategies,
    ensure_runnable,
    get_strategy,
    runnable_strategies,
)
from core.engine.strategies.base import Requirement
from core.engine.text import answer_contains_gold, is_idk
from core.engine.types import Passage, SourceId, SourceInfo, Vector
from tests.fakes import HashEmbedder, ScriptedGenerator

QUESTION = "who recorded i can't help falling in love with you"
TRUE = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."
FALSE = "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970."
NOISE = "The Chicago Fire fourth season has twenty three episodes."


class CountingRetriever(InMemoryRetriever):
    def __init__(self) -> None:
        super().__init__()
        self.per_source_calls = 0
        self.searched: list[list[int]] = []  # the sources of each per-source search

    def top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        self.per_source_calls += 1
        self.searched.append(list(sources))
        return super().top_k_per_source(query_vector, sources, k)


def _context(weights: list[float], texts: list[str], **extra: Any) -> EngineContext:
    embedder = HashEmbedder()
    retriever = CountingRetriever()
    sources = []
    for i, (w, text) in enumerate(zip(weights, texts, strict=True)):
        retriever.add_texts(i, [text, NOISE], embedder)
        # Estimated sources: the accuracy behind the weight (v = N * w - 1), checked on 20 answers.
        accuracy = min(1.0, (w + 1.0) / len(weights))
        sources.append(SourceInfo(i, f"source {i}", weight=w, answers_count=20, accuracy=accuracy))
    generator = extra.pop("generator", ExtractiveReader())
    return EngineContext(retriever, embedder, generator, EmbeddingLexicalNLI(embedder), sources, **extra)


def _answer(name: str, ctx: EngineContext, **raw: Any) -> StrategyResult:
    strategy = get_strategy(name)
    return strategy.answer_checked(QUESTION, ctx, parse_params(strategy.Params, raw))


def test_it_lists_the_builtin_strategies() -> None:
    names = available_strategies()
    for name in [
        "ra-rag",
        "ra-rag-rss",
        "ra-rag-all",
        "ra-rag-nofilter",
        "mv",
        "wmv-oracle",
        "vanilla-rag",
        "vanilla-llm",
        "robust-rag",
    ]:
        assert name in names


def test_it_lets_reliable_sources_outvote_the_majority() -> None:
    ctx = _context([2.0, 1.8, 0.2, 0.2, 0.2], [TRUE, TRUE, FALSE, FALSE, FALSE])
    rarag = _answer("ra-rag", ctx, kappa=5)
    mv = _answer("mv", ctx)
    assert answer_contains_gold(rarag.answer, "Elvis Presley")
    assert answer_contains_gold(mv.answer, "Frank Sinatra")
    assert rarag.backend == "extractive" and rarag.strategy == "ra-rag"
    assert {c.label for c in rarag.clusters} >= {rarag.answer}
    # The model probability: Elvis (accuracies 0.6, 0.56), Sinatra (three at 0.24: weight 0), or neither.
    assert 1 / 3 < rarag.confidence < 0.6


def test_it_searches_only_the_sources_kappa_rrss_reaches_and_stops_at_kappa() -> None:
    ctx = _context([0.9, 0.8, 0.7, 0.6, 0.5], [TRUE, NOISE, TRUE, FALSE, TRUE])
    result = _answer("ra-rag", ctx, kappa=2)
    # One search, of twice the first batch in visiting order: the fifth source is never searched.
    assert ctx.retriever.searched == [[0, 1, 2, 3]]  # type: ignore[attr-defined]
    assert result.trace["searched"] == [0, 1, 2, 3]
    assert result.trace["visited"] == [0, 1, 2]
    assert result.trace["selected"] == [0, 2]
    # Source 1 holds only noise, nothing about the question: it abstains without a call.
    assert result.stats.calls == 2
    assert [v.source_id for v in result.votes if v.cluster is not None] == [0, 2]


def test_it_searches_further_sources_in_growing_rounds_with_the_passages_of_one_search() -> None:
    # Sixteen sources by falling weight; the first thirteen read only noise and abstain, so
    # κ-RRSS (κ = 2) visits fifteen of them before two answer.
    texts = [NOISE] * 13 + [TRUE, TRUE, FALSE]
    ctx = _context([1.0 - 0.05 * i for i in range(16)], texts)
    encoded: list[str] = []
    encode = ctx.embedder.encode

    def spy(texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        encoded.extend(texts)
        return encode(texts, batch_size)

    ctx.embedder.encode = spy  # type: ignore[method-assign]
    result = _answer("ra-rag", ctx, kappa=2, k=2)
    assert result.trace["visited"] == list(range(15))
    assert result.trace["selected"] == [13, 14]
    # Rounds: twice the first batch (4), then as many as searched so far (4, then 8).
    assert ctx.retriever.searched == [[0, 1, 2, 3], [4, 5, 6, 7], list(range(8, 16))]  # type: ignore[attr-defined]
    assert encoded.count(QUESTION) == 1  # the question is encoded once, for every round
    # Each source's passages are those one search over every source gives it (the ones about
    # the question: core.engine.steps.relevance).
    everything = InMemoryRetriever.top_k_per_source(
        ctx.retriever,  # type: ignore[arg-type]
        encode([QUESTION])[0],
        [s.id for s in ctx.sources],
        2,
    )
    assert result.votes
    for vote in result.votes:
        assert [p.chunk_id for p in vote.passages] == [
            p.chunk_id for p in on_topic(QUESTION, everything[vote.source_id])
        ]
    assert answer_contains_gold(result.votes[13].response, "Elvis Presley")
    # The two that answered are estimated below chance here ((w + 1) / 16): no reliable answer.
    assert is_idk(result.answer) and result.notes[0].startswith("No reliable answer")


def test_it_searches_nothing_without_sources() -> None:
    ctx = _context([], [])
    result = _answer("ra-rag", ctx)
    assert ctx.retriever.searched == []  # type: ignore[attr-defined]
    assert is_idk(result.answer)


def test_it_marks_as_used_only_the_evidence_of_the_winning_cluster() -> None:
    ctx = _context([2.0, 1.8, 0.2], [TRUE, TRUE, FALSE])
    result = _answer("ra-rag-all", ctx)
    used_sources = {e.source_id for e in result.evidence if e.used}
    assert used_sources == {0, 1}
    assert {e.source_id for e in result.evidence} == {0, 1, 2}
    assert set(result.chunk_ids) == {p.chunk_id for v in result.votes for p in v.passages}


def test_it_uses_oracle_reliabilities_for_wmv_oracle_and_refuses_without_them() -> None:
    ctx = _context([1.0, 1.0, 1.0], [TRUE, FALSE, FALSE], oracle={0: 0.95, 1: 0.3, 2: 0.3})
    result = _answer("wmv-oracle", ctx)
    assert answer_contains_gold(result.answer, "Elvis Presley")
    with pytest.raises(StrategyUnavailable, match="true reliabilities"):
        ensure_runnable(get_strategy("wmv-oracle"), _context([1.0], [TRUE]))


def test_it_refuses_vanilla_llm_with_the_extractive_reader_and_runs_it_with_a_free_text_model() -> None:
    offline = _context([1.0], [TRUE])
    assert "vanilla-llm" not in runnable_strategies(offline.offers())
    with pytest.raises(StrategyUnavailable, match="language model that writes free text"):
        ensure_runnable(get_strategy("vanilla-llm"), offline)
    llm = _context([1.0], [TRUE], generator=ScriptedGenerator())
    assert Requirement.FREE_TEXT in llm.offers()
    result = _answer("vanilla-llm", llm)
    assert is_idk(result.answer) and result.stats.calls == 1 and result.evidence == []


def test_it_answers_with_pooled_passages_for_vanilla_and_robust_rag() -> None:
    ctx = _context([1.0] * 4, [TRUE, TRUE, TRUE, FALSE])
    vanilla = _answer("vanilla-rag", ctx)
    robust = _answer("robust-rag", ctx)
    assert vanilla.stats.calls == 1
    assert len(vanilla.evidence) == 8
    # Used: the pooled passages that hold the answer (the three true ones), not the whole pool
    # (neither the noise each source holds, nor the false one).
    assert sorted(e.source_id for e in vanilla.evidence if e.used) == [0, 1, 2]
    assert answer_contains_gold(robust.answer, "Elvis") or answer_contains_gold(robust.answer, "Presley")
    assert robust.stats.calls == 8  # one per pooled passage
    assert robust.trace["keywords"]
    assert any(e.used for e in robust.evidence) and not all(e.used for e in robust.evidence)


def test_it_validates_each_strategys_own_parameters() -> None:
    ra_rag = get_strategy("ra-rag")
    assert parse_params(ra_rag.Params, {"kappa": 2}).kappa == 2  # type: ignore[attr-defined]
    assert parse_params(ra_rag.Params, {}, {"kappa": 6, "pooled_k": 3}).kappa == 6  # type: ignore[attr-defined]
    with pytest.raises(ParamError) as bad:
        parse_params(ra_rag.Params, {"kappa": 0, "tau": "high", "pooled_k": 5})
    assert set(bad.value.errors) == {"kappa", "tau", "params"}
    assert "pooled_k" in bad.value.errors["params"]
    with pytest.raises(ParamError) as bad:
        parse_params(get_strategy("vanilla-rag").Params, {"kappa": 3})
    assert "kappa" in bad.value.errors["params"]


def test_name_value_pairs_read_their_values_as_json_and_bare_words_as_text() -> None:
    raw = parse_assignments(["kappa=4", " tau = 0.2", "plain_fallback=true", "prompt=compact", 'label="x=1"'])
    assert raw == {"kappa": 4, "tau": 0.2, "plain_fallback": True, "prompt": "compact", "label": "x=1"}
    for bad in ("kappa", "=4"):
        with pytest.raises(ValueError, match="write NAME=VALUE"):
            parse_assignments(["tau=0.2", bad])
