"""Through the packaged MiniLM model, offline (no download)."""

from __future__ import annotations

import numpy as np

from core.engine.backends.embeddings import get_embedder
from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, get_strategy
from core.engine.text import answer_contains_gold
from core.engine.types import SourceInfo


def test_it_returns_normalised_384_dim_vectors_and_caches_the_model() -> None:
    embedder = get_embedder()
    vectors = embedder.encode(["Elvis recorded the song.", "Photosynthesis in chloroplasts."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert get_embedder() is embedder


def test_it_answers_through_real_retrieval() -> None:
    embedder = get_embedder()
    retriever = InMemoryRetriever()
    corpus = {
        0: [
            "Elvis Presley recorded I Can't Help Falling in Love with You in 1961.",
            "Photosynthesis happens in the chloroplasts of plant cells.",
        ],
        1: [
            "The song I Can't Help Falling in Love with You was recorded by Elvis Presley.",
            "The Eiffel Tower is in Paris.",
        ],
    }
    for sid, texts in corpus.items():
        retriever.add_texts(sid, texts, embedder)
    ctx = EngineContext(
        retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), [SourceInfo(0, "a"), SourceInfo(1, "b")]
    )
    strategy = get_strategy("ra-rag")
    result = strategy.answer_checked("who recorded i can't help falling in love with you", ctx, strategy.Params())
    assert answer_contains_gold(result.answer, "Elvis Presley")
    # Each source read its passage about the song; the other subject's was set aside.
    assert [len(v.passages) for v in result.votes] == [1, 1]
    assert all("Love" in v.passages[0].text for v in result.votes)
    unfiltered = strategy.answer_checked(
        "who recorded i can't help falling in love with you", ctx, parse_params(strategy.Params, {"min_relevance": 0.0})
    )
    assert all(v.passages[0].distance < v.passages[-1].distance for v in unfiltered.votes)
