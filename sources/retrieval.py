"""PostgreSQL + pgvector implementation of core.engine.types.Retriever.

Per-source top-k runs as ONE statement through the SQL function sources_chunk_top_k
(migrations 0004 and 0005, sources/vector_index.py): a source with a ready vector table of its
own is searched by that table's HNSW graph, one branch each; every other source (small ones;
big ones while their graph is built) exactly, all of them in one LATERAL branch. The function
returns ``k * RERANK_FACTOR`` candidates per source ranked by halfvec distance; the statement
re-ranks them by the float distance of the stored vectors and keeps k per source, so the
distances returned are exact.

Over many sources (RETRIEVAL_FANOUT_MIN_SOURCES) the sources are dealt round-robin into
RETRIEVAL_FANOUT shares, each searched by the same statement on a connection of its own, at
once: one statement walks its sources' graphs one after another (PostgreSQL does not spread an
append of LIMIT index scans over parallel workers), so the shares shorten the wait on a
server with the cores for it (1.24-1.76x with two on two cores, docs/performance.md). Each
share is one statement; the results are the same rows.

Pooled top-k (the baselines) walks the one HNSW index over all chunks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from core.engine.types import Passage, SourceId, Vector

VectorSink = Callable[[list[str], list[np.ndarray]], None]

# Candidates per source taken from the halfvec graph, per result kept. The float re-rank
# orders them and gives exact distances; taking twice as many changed no result of the
# scale benchmark (halfvec keeps about three significant digits), so none extra are taken.
RERANK_FACTOR = 1


def _per_source_sql(*, with_vectors: bool) -> str:
    """``with_vectors``: each row also carries the chunk's stored vector in pgvector's binary
    form (vector_send: a 4-byte header, then big-endian float4s), ten times cheaper to read
    than its text form."""
    vector = ", vector_send(r.embedding)" if with_vectors else ""
    return f"""
SELECT r.source_id, r.id, r.document_id, r.text, r.distance, d.title, d.url{vector}
FROM (
    SELECT t.source_id, ch.id, ch.document_id, ch.text, ch.embedding, ch.embedding <=> %(q)s::vector AS distance,
           row_number() OVER (PARTITION BY t.source_id ORDER BY ch.embedding <=> %(q)s::vector, ch.id) AS rank
    FROM sources_chunk_top_k(%(q)s::vector, %(ids)s::bigint[], %(candidates)s, %(ef)s) t
    JOIN sources_chunk ch ON ch.id = t.chunk_id
) r
CROSS JOIN LATERAL (SELECT d.title, d.url FROM sources_document d WHERE d.id = r.document_id LIMIT 1) d
WHERE r.rank <= %(k)s
"""


_PER_SOURCE_SQL = _per_source_sql(with_vectors=False)
_PER_SOURCE_WITH_VECTORS_SQL = _per_source_sql(with_vectors=True)


# The reference: top-k of each selected source through a LATERAL subquery. `+ 0` on the
# distance hides it from the planner's index matching, forcing an exact scan of the rows.
_EXACT_SQL = """
SELECT s.id, c.id, c.document_id, c.text, c.distance, d.title, d.url
FROM sources_source s
CROSS JOIN LATERAL (
    SELECT ch.id, ch.document_id, ch.text, ch.embedding <=> %(q)s::vector AS distance
    FROM sources_chunk ch
    WHERE ch.source_id = s.id
    ORDER BY (ch.embedding <=> %(q)s::vector) + 0
    LIMIT %(k)s
) c
JOIN sources_document d ON d.id = c.document_id
WHERE s.id = ANY(%(ids)s)
"""


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


def _vector_literal(vector: Vector) -> str:
    array = np.asarray(vector, dtype=np.float32).ravel()
    return "[" + ",".join(f"{x:.7g}" for x in array) + "]"


def _binary_vector(data: object) -> np.ndarray:
    """A vector from vector_send's bytes: int16 dimension, int16 unused, float4s, big-endian."""
    return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)  # type: ignore[call-overload]  # the driver's bytes, typed object


def _passages(rows: Sequence[tuple[Any, ...]]) -> list[Passage]:  # database rows: untyped columns
    return [
        Passage(
            chunk_id=int(chunk_id),
            source_id=int(source_id),
            document_id=int(document_id),
            text=str(text),
            distance=float(distance),
            title=str(title or ""),
            url=str(url or ""),
        )
        for source_id, chunk_id, document_id, text, distance, title, url in rows
    ]


_POOL: ThreadPoolExecutor | None = None
_POOL_KEY: tuple[int, int] | None = None  # (process, threads): a forked worker makes its own
_POOL_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's retrieval threads; each keeps one database connection of its own
    (Django's connections are per thread), so a fanned-out search opens none per question."""
    global _POOL, _POOL_KEY
    key = (os.getpid(), threads)
    with _POOL_LOCK:
        if _POOL is None or key != _POOL_KEY:
            if _POOL is not None and _POOL_KEY is not None and _POOL_KEY[0] == key[0]:
                _POOL.shutdown(wait=False)  # another size asked for in this process
            _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="retrieval")
            _POOL_KEY = key
        return _POOL


def _fetch(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:  # SQL parameters and rows: untyped
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


_POOL_CONNECTIONS: list[BaseDatabaseWrapper] = []  # the pool threads' connections (close_pool_connections)
_THREAD = threading.local()


def close_pool_connections() -> None:
    """Close the retrieval threads' connections (they reconnect when next used): for a
    database about to be dropped, as a test database at the end of a run."""
    with _POOL_LOCK:
        wrappers = list(_POOL_CONNECTIONS)
    for wrapper in wrappers:
        wrapper.close()


def _fetch_in_pool_thread(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """_fetch on the pool thread's own connection, reconnecting once if it was lost (a server
    restart, an idle timeout): nobody else closes a pool thread's connection."""
    if not getattr(_THREAD, "registered", False):
        wrapper = connections[DEFAULT_DB_ALIAS]
        wrapper.inc_thread_sharing()  # close_pool_connections() closes it from another thread
        with _POOL_LOCK:
            _POOL_CONNECTIONS.append(wrapper)
        _THREAD.registered = True
    try:
        return _fetch(sql, params)
    except (OperationalError, InterfaceError):
        if connection.connection is not None and connection.is_usable():
            raise  # the statement failed, not the connection
        connection.close()
        return _fetch(sql, params)


def fanout_shares(ids: Sequence[SourceId], fanout: int) -> list[list[int]]:
    """The sources dealt round-robin into at most ``fanout`` non-empty shares."""
    parts = max(1, min(int(fanout), len(ids)))
    return [[int(s) for s in ids[i::parts]] for i in range(parts)]


def _group(passages: list[Passage], sources: Sequence[SourceId]) -> dict[SourceId, list[Passage]]:
    grouped: dict[SourceId, list[Passage]] = {int(s): [] for s in sources}
    for passage in sorted(passages, key=lambda p: (p.source_id, p.distance)):
        grouped.setdefault(passage.source_id, []).append(passage)
    return grouped


class PgRetriever:
    """Retriever over the sources_chunk table (cosine distance).

    ``ef_search``: the HNSW candidate list of the per-source graphs (default the setting
    SOURCE_INDEX_EF_SEARCH; the pooled search uses the connection's hnsw.ef_search).
    ``pooled_among``: pooled search reads only these sources (a question limited to some
    sources); None: every active source.
    ``vector_sink(texts, vectors)``: hears the stored vector of every passage a per-source
    search returns, fetched in the same statement (an NLI that encodes with the embedder
    that embedded the chunks keeps them, and never encodes those passages again).
    ``fanout``: connections a per-source search over many sources is split across (default
    the setting RETRIEVAL_FANOUT; 1: one statement on the caller's connection)."""

    def __init__(
        self,
        ef_search: int | None = None,
        *,
        pooled_among: Sequence[SourceId] | None = None,
        vector_sink: VectorSink | None = None,
        fanout: int | None = None,
    ) -> None:
        self.ef_search = int(ef_search if ef_search is not None else settings.SOURCE_INDEX_EF_SEARCH)
        self.pooled_among = None if pooled_among is None else [int(s) for s in pooled_among]
        self.vector_sink = vector_sink
        self.fanout = fanout

    def shares(self, sources: Sequence[SourceId]) -> list[list[int]]:
        """How a per-source search over ``sources`` is split across connections: one share
        below RETRIEVAL_FANOUT_MIN_SOURCES sources and inside a transaction (the other
        connections would not see its uncommitted rows)."""
        fanout = self.fanout if self.fanout is not None else settings.RETRIEVAL_FANOUT
        if len(sources) < settings.RETRIEVAL_FANOUT_MIN_SOURCES or connection.in_atomic_block:
            fanout = 1
        return fanout_shares(sources, fanout)

    def top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        """One statement per share of the sources (sources_chunk_top_k; one share unless
        there are many sources: shares()), the shares at once; every source gets
        min(k, its chunks) passages, nearest first."""
        if not sources:
            return {}
        ids = [int(s) for s in sources]
        params: dict[str, object] = {
            "q": _vector_literal(query_vector),
            "k": int(k),
            "candidates": int(k) * RERANK_FACTOR,
            "ef": self.ef_search,
        }
        sql = _PER_SOURCE_SQL if self.vector_sink is None else _PER_SOURCE_WITH_VECTORS_SQL
        first, *others = self.shares(ids)
        pending = []
        if others:
            pool = _pool(len(others))
            pending = [pool.submit(_fetch_in_pool_thread, sql, {**params, "ids": share}) for share in others]
        rows = _fetch(sql, {**params, "ids": first})
        for future in pending:
            rows.extend(future.result())
        if self.vector_sink is not None and rows:
            self.vector_sink([str(row[3]) for row in rows], [_binary_vector(row[7]) for row in rows])
            rows = [row[:7] for row in rows]
        return _group(_passages(rows), ids)

    def top_k_pooled(self, query_vector: Vector, k: int) -> list[Passage]:
        params: dict[str, str | int | list[int]] = {"q": _vector_literal(query_vector), "k": int(k)}
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
