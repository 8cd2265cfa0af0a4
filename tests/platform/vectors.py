"""Vectors, chunks and index-scan counts shared by the retrieval tests (test_retrieval.py,
test_source_vector_indexes.py)."""

from __future__ import annotations

import numpy as np
from django.db import connection

from sources import vector_index
from sources.models import Chunk, Source
from tests.factories import DocumentFactory

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    """Unit vectors around topic centres (closer to real embeddings than uniform noise)."""
    return unit(centres[rng.integers(0, len(centres), n)] + 1.4 * rng.standard_normal((n, DIM)) / np.sqrt(DIM))


def add_chunks(source: Source, vectors: np.ndarray, start: int = 0) -> list[Chunk]:
    """Chunks "<source> chunk <n>" with these vectors, in the source's first document (one
    titled "<source> doc" is made when it has none)."""
    document = source.documents.first() or DocumentFactory(source=source, title=f"{source.name} doc")
    return Chunk.objects.bulk_create(
        [
            Chunk(
                document=document,
                source=source,
                ordinal=start + i,
                text=f"{source.name} chunk {start + i}",
                embedding=v,
            )
            for i, v in enumerate(vectors)
        ],
        batch_size=2000,
    )


def index_scans(names: list[str]) -> list[int]:
    """Scans of these indexes counted by this backend and not yet reported: the count only
    grows inside a transaction (each test's), so a difference counts the scans in between."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(pg_stat_get_xact_numscans(to_regclass(n)), 0) FROM unnest(%s::text[]) n", [names]
        )
        return [int(row[0]) for row in cursor.fetchall()]


def hnsw_scans(source_id: int) -> int:
    """index_scans() of the source's own HNSW index."""
    [count] = index_scans([f"{vector_index.table_name(source_id)}_hnsw"])
    return count


def walk_graphs_even_when_small() -> None:
    """A table of a few thousand halfvecs is cheap to read whole, and the planner may rightly
    do that rather than walk its graph; make reading it whole look expensive (this test's
    transaction only) so that the graph is walked whenever it may be."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
