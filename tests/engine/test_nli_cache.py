"""The offline NLI keeps passage vectors, so repeated passages are not encoded again."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.engine.backends.nli import EmbeddingLexicalNLI


class CountingEmbedder:
    name = "counting"
    dimension = 4

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.encoded.extend(texts)
        rows = [np.array([len(t), t.count("e"), 1.0, 0.5], dtype=np.float32) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


def test_it_encodes_each_text_once_across_calls_and_gives_the_same_scores():
    embedder = CountingEmbedder()
    nli = EmbeddingLexicalNLI(embedder)
    pairs = [("The Eiffel Tower is in Paris.", "The tower is in Paris."), ("Bees make honey.", "Bees make wax.")]
    first = nli.predict(pairs)
    second = nli.predict(pairs + [("Bees make honey.", "Honey comes from bees.")])
    assert second[:2] == first
    assert sorted(embedder.encoded) == sorted(set(embedder.encoded))  # nothing encoded twice
    assert len(embedder.encoded) == 5


def test_the_cache_is_bounded():
    embedder = CountingEmbedder()
    nli = EmbeddingLexicalNLI(embedder, cache_size=3)
    nli.predict([("a one", "b two"), ("c three", "d four")])
    assert len(nli._cache) == 3
    nli.predict([("a one", "b two")])  # "a one" was evicted first, so it is encoded again
    assert embedder.encoded.count("a one") == 2
