from __future__ import annotations

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import (
    AnswerStrategy,
    EngineContext,
    EngineParams,
    StrategyResult,
    available_strategies,
    get_strategy,
    register,
)
from core.engine.text import answer_contains_gold, is_idk
from core.engine.types import SourceInfo
from tests.engine.fakes import HashEmbedder

QUESTION = "who recorded i can't help falling in love with you"
TRUE = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."
FALSE = "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970."
NOISE = "The Chicago Fire fourth season has twenty three episodes."


class CountingRetriever(InMemoryRetriever):
    def __init__(self) -> None:
        super().__init__()
        self.per_source_calls = 0

    def top_k_per_source(self, query_vector, sources, k):  # type: ignore[no-untyped-def]
        self.per_source_calls += 1
        return super().top_k_per_source(query_vector, sources, k)


def _context(reliabilities: list[float], texts: list[str], **params: object) -> EngineContext:
    embedder = HashEmbedder()
    retriever = CountingRetriever()
    sources = []
    for i, (r, text) in enumerate(zip(reliabilities, texts, strict=False)):
        retriever.add_texts(i, [text, NOISE], embedder)
        sources.append(SourceInfo(i, f"source {i}", reliability=r))
    return EngineContext(
        retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources, EngineParams(**params)
    )  # type: ignore[arg-type]


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
    ctx = _context([2.0, 1.8, 0.2, 0.2, 0.2], [TRUE, TRUE, FALSE, FALSE, FALSE], kappa=5)
    rarag = get_strategy("ra-rag").answer(QUESTION, ctx)
    mv = get_strategy("mv").answer(QUESTION, ctx)
    assert answer_contains_gold(rarag.answer, "Elvis Presley")
    assert answer_contains_gold(mv.answer, "Frank Sinatra")
    assert rarag.backend == "extractive" and rarag.strategy == "ra-rag"
    assert {c.label for c in rarag.clusters} >= {rarag.answer}
    assert 0.5 < rarag.confidence <= 1.0


def test_it_retrieves_all_sources_in_one_call_and_stops_at_kappa() -> None:
    ctx = _context([0.9, 0.8, 0.7, 0.6, 0.5], [TRUE, NOISE, TRUE, FALSE, TRUE], kappa=2)
    result = get_strategy("ra-rag").answer(QUESTION, ctx)
    assert ctx.retriever.per_source_calls == 1  # type: ignore[attr-defined]
    assert result.stats.extra["visited"] == [0, 1, 2]
    assert result.stats.extra["selected"] == [0, 2]
    assert result.stats.calls == 3
    assert [v.source_id for v in result.votes if v.cluster is not None] == [0, 2]


def test_it_uses_oracle_reliabilities_for_wmv_oracle() -> None:
    ctx = _context([1.0, 1.0, 1.0], [TRUE, FALSE, FALSE], oracle_reliabilities={0: 0.95, 1: 0.3, 2: 0.3})
    result = get_strategy("wmv-oracle").answer(QUESTION, ctx)
    assert answer_contains_gold(result.answer, "Elvis Presley")


def test_it_says_idk_for_vanilla_llm_with_the_extractive_reader() -> None:
    ctx = _context([1.0], [TRUE])
    result = get_strategy("vanilla-llm").answer(QUESTION, ctx)
    assert is_idk(result.answer) and result.stats.calls == 1
    assert "note" in result.stats.extra


def test_it_answers_with_pooled_passages_for_vanilla_and_robust_rag() -> None:
    ctx = _context([1.0] * 4, [TRUE, TRUE, TRUE, FALSE])
    vanilla = get_strategy("vanilla-rag").answer(QUESTION, ctx)
    robust = get_strategy("robust-rag").answer(QUESTION, ctx)
    assert vanilla.stats.calls == 1
    assert answer_contains_gold(robust.answer, "Elvis") or answer_contains_gold(robust.answer, "Presley")
    assert robust.stats.calls == 8  # one per pooled passage


def test_it_plugs_in_a_new_strategy_with_a_decorator() -> None:
    @register("always-paris-test")
    class AlwaysParis(AnswerStrategy):
        def answer(self, question: str, ctx: EngineContext) -> StrategyResult:
            return StrategyResult("Paris", 1.0, self.name, ctx.generator.name)

    assert "always-paris-test" in available_strategies()
    result = get_strategy("always-paris-test").answer("?", _context([1.0], [TRUE]))
    assert result.answer == "Paris" and result.strategy == "always-paris-test"
