"""Exact cosine retrieval over an in-memory corpus (benchmark and tests).

Chunks are grouped by source; vectors are L2-normalised, so cosine similarity is a dot
product and one matrix product serves every source of a query at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.engine.types import Embedder, Passage, SourceId, Vector


class InMemoryRetriever:
    def __init__(self) -> None:
        self._passages: list[Passage] = []
        self._vectors: list[Vector] = []
        self._matrix: np.ndarray | None = None
        self._source_rows: dict[SourceId, np.ndarray] = {}
        self.active: set[SourceId] | None = None  # None: every source is active

    def add(self, passages: Sequence[Passage], vectors: np.ndarray) -> None:
        if len(passages) != len(vectors):
            raise ValueError("one vector per passage")
        self._passages.extend(passages)
        self._vectors.extend(np.asarray(vectors, dtype=np.float32))
        self._matrix = None

    def add_texts(
        self, source_id: SourceId, texts: Sequence[str], embedder: Embedder, start_id: int | None = None
    ) -> list[Passage]:
        first = len(self._passages) if start_id is None else start_id
        passages = [Passage(first + i, source_id, t) for i, t in enumerate(texts)]
        self.add(passages, embedder.encode(list(texts)))
        return passages

    def _index(self) -> np.ndarray:
        if self._matrix is None:
            dim = len(self._vectors[0]) if self._vectors else 0
            self._matrix = (
                np.vstack(self._vectors).astype(np.float32) if self._vectors else np.zeros((0, dim), dtype=np.float32)
            )
            groups: dict[SourceId, list[int]] = {}
            for row, passage in enumerate(self._passages):
                groups.setdefault(passage.source_id, []).append(row)
            self._source_rows = {s: np.array(r, dtype=np.int64) for s, r in groups.items()}
        return self._matrix

    def _hits(self, sims: np.ndarray, rows: np.ndarray, k: int) -> list[Passage]:
        if len(rows) == 0 or k <= 0:
            return []
        local = sims[rows]
        top = np.argsort(-local, kind="stable")[:k]
        out = []
        for i in top:
            p = self._passages[int(rows[i])]
            out.append(Passage(p.chunk_id, p.source_id, p.text, float(1.0 - local[i]), p.document_id, p.title, p.url))
        return out

    def top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        matrix = self._index()
        sims = matrix @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
        empty = np.zeros(0, dtype=np.int64)
        return {s: self._hits(sims, self._source_rows.get(s, empty), k) for s in sources}

    def top_k_pooled(self, query_vector: Vector, k: int) -> list[Passage]:
        matrix = self._index()
        sims = matrix @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
        rows = [r for s, r in self._source_rows.items() if self.active is None or s in self.active]
        all_rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        return self._hits(sims, all_rows, k)
