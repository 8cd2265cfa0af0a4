"""Sources that each hold one passage, asked one question (the abstention and copy-group tests)."""

from __future__ import annotations

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, StrategyResult, get_strategy
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

QUESTION = "who recorded i can't help falling in love with you"
TRUE = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."
FALSE = "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970."
NOISE = "The Chicago Fire fourth season has twenty three episodes."


def ask(
    name: str,
    sources: list[tuple[str, float, float]],
    *,
    groups: tuple[frozenset[int], ...] = (),
    kappa: int | None = None,
) -> StrategyResult:
    """Each source: its one passage, its estimated accuracy and its weight; `groups`: the
    sources found copying each other; RA-RAG consults `kappa` sources (all by default)."""
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    infos = []
    for i, (text, accuracy, weight) in enumerate(sources):
        retriever.add_texts(i, [text], embedder)
        infos.append(SourceInfo(i, f"source {i}", weight=weight, answers_count=40, accuracy=accuracy))
    ctx = EngineContext(
        retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), infos, copy_groups=groups
    )
    strategy = get_strategy(name)
    params = {"kappa": kappa or len(sources)} if name == "ra-rag" else {}
    return strategy.answer_checked(QUESTION, ctx, parse_params(strategy.Params, params))
