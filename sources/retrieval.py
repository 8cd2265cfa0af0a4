"""PostgreSQL + pgvector implementation of core.engine.types.Retriever.

Per-source top-k runs as ONE statement: a LATERAL subquery per source. Sources with many
chunks use the HNSW index with pgvector's iterative index scan (hnsw.iterative_scan), so
the source filter cannot starve the result; sources with few chunks are searched exactly
(through the source_id index), which is both faster and exact where a filtered
approximate scan would have to walk most of the graph to find them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db import connection, transaction

from core.engine.types import Passage, SourceId, Vector

# Below this many chunks a source is searched exactly: scanning a few thousand vectors
# costs less than a filtered HNSW walk that must skip everyone else's chunks.
EXACT_SEARCH_MAX_CHUNKS = 5000


def _per_source_sql(*, use_index: bool, source_filter: str) -> str:
    """Top-k of each selected source through a LATERAL subquery. `+ 0` on the distance
    hides it from the planner's index matching, forcing an exact scan of the source's rows."""
    order = "ch.embedding <=> %(q)s::vector" if use_index else "(ch.embedding <=> %(q)s::vector) + 0"
    return f"""
SELECT s.id, c.id, c.document_id, c.text, c.distance, d.title, d.url
FROM sources_source s
CROSS JOIN LATERAL (
    SELECT ch.id, ch.document_id, ch.text, ch.embedding <=> %(q)s::vector AS distance
    FROM sources_chunk ch
    WHERE ch.source_id = s.id
    ORDER BY {order}
    LIMIT %(k)s
) c
JOIN sources_document d ON d.id = c.document_id
WHERE s.id = ANY(%(ids)s){source_filter}
"""


_PER_SOURCE_SQL = (
    _per_source_sql(use_index=True, source_filter=" AND s.chunk_count > %(exact_below)s")
    + "UNION ALL"
    + _per_source_sql(use_index=False, source_filter=" AND s.chunk_count <= %(exact_below)s")
)


def _pooled_sql(*, among: bool) -> str:
    """The k nearest chunks of the active sources (``among``: of those listed in %(ids)s)."""
    listed = " AND ch.source_id = ANY(%(ids)s)" if among else ""
    return f"""
SELECT c.source_id, c.id, c.document_id, c.text, c.distance, d.title, d.url
FROM (
    SELECT ch.id, ch.source_id, ch.document_id, ch.text, ch.embedding <=> %(q)s::vector AS distance
    FROM sources_chunk ch
    WHERE ch.source_id IN (SELECT id FROM sources_source WHERE active){listed}
    ORDER BY ch.embedding <=> %(q)s::vector
    LIMIT %(k)s
) c
JOIN sources_document d ON d.id = c.document_id
ORDER BY c.distance
"""


_POOLED_SQL = _pooled_sql(among=False)
_POOLED_AMONG_SQL = _pooled_sql(among=True)

_EXACT_SQL = _per_source_sql(use_index=False, source_filter="")


def _vector_literal(vector: Vector) -> str:
    array = np.asarray(vector, dtype=np.float32).ravel()
    return "[" + ",".join(f"{x:.7g}" for x in array) + "]"


def _passages(rows: Sequence[tuple[object, ...]]) -> list[Passage]:
    return [
        Passage(
            chunk_id=int(chunk_id),  # type: ignore[arg-type]
            source_id=int(source_id),  # type: ignore[arg-type]
            document_id=int(document_id),  # type: ignore[arg-type]
            text=str(text),
            distance=float(distance),  # type: ignore[arg-type]
            title=str(title or ""),
            url=str(url or ""),
        )
        for source_id, chunk_id, document_id, text, distance, title, url in rows
    ]


def _group(passages: list[Passage], sources: Sequence[SourceId]) -> dict[SourceId, list[Passage]]:
    grouped: dict[SourceId, list[Passage]] = {int(s): [] for s in sources}
    for passage in sorted(passages, key=lambda p: (p.source_id, p.distance)):
        grouped.setdefault(passage.source_id, []).append(passage)
    return grouped


class PgRetriever:
    """Retriever over the sources_chunk table (HNSW, cosine distance).

    ``pooled_among``: pooled search reads only these sources (a question limited to some
    sources); None: every active source."""

    def __init__(
        self, exact_below: int = EXACT_SEARCH_MAX_CHUNKS, *, pooled_among: Sequence[SourceId] | None = None
    ) -> None:
        self.exact_below = exact_below
        self.pooled_among = None if pooled_among is None else [int(s) for s in pooled_among]

    def top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        """One statement for all sources. hnsw.iterative_scan and hnsw.ef_search are set per
        connection (reliability_site.settings), so no extra round trip is spent on them."""
        if not sources:
            return {}
        ids = [int(s) for s in sources]
        params = {"q": _vector_literal(query_vector), "k": int(k), "ids": ids, "exact_below": self.exact_below}
        with connection.cursor() as cursor:
            cursor.execute(_PER_SOURCE_SQL, params)
            rows = cursor.fetchall()
        return _group(_passages(rows), ids)

    def top_k_pooled(self, query_vector: Vector, k: int) -> list[Passage]:
        params: dict[str, object] = {"q": _vector_literal(query_vector), "k": int(k)}
        sql = _POOLED_SQL
        if self.pooled_among is not None:
            sql, params["ids"] = _POOLED_AMONG_SQL, self.pooled_among
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return _passages(rows)

    def exact_top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        """Exact search (no index): the reference the HNSW results are measured against."""
        ids = [int(s) for s in sources]
        with transaction.atomic(), connection.cursor() as cursor:
            # SET LOCAL lasts until the end of the *outermost* transaction: restore the previous
            # value, or every later query of a caller's transaction would lose its indexes
            # (and the HNSW search would silently turn exact).
            cursor.execute("SELECT current_setting('enable_indexscan'), set_config('enable_indexscan', 'off', true)")
            previous = cursor.fetchone()[0]
            cursor.execute(_EXACT_SQL, {"q": _vector_literal(query_vector), "k": int(k), "ids": ids})
            rows = cursor.fetchall()
            cursor.execute("SELECT set_config('enable_indexscan', %s, true)", [previous])
        return _group(_passages(rows), ids)
