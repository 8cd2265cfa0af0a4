"""What the benchmark times: exact and HNSW per-source search, recall against the exact
result, the first κ-RRSS round, pooled search, and partial HNSW indexes."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import scratch_db

from scale.corpus import DIM

if TYPE_CHECKING:
    from core.engine.types import Passage

R = TypeVar("R")


def recall(results: list[dict[int, list[Passage]]], exact: list[dict[int, list[Passage]]], k: int) -> tuple[float, int]:
    """(recall@k against the exact results, sources that got fewer than the exact search did)."""
    hits = total = short = 0
    for got, want in zip(results, exact, strict=True):
        for sid, passages in want.items():
            found = got.get(sid, [])
            short += len(found) < len(passages)  # exact search returns min(k, the source's chunks)
            hits += len({p.chunk_id for p in passages} & {p.chunk_id for p in found})
            total += len(passages)
    return hits / total, short


def timed(fn: Callable[[np.ndarray], R], queries: np.ndarray) -> tuple[list[float], list[R]]:
    for q in queries[:5]:  # warm the caches this path reads
        fn(q)
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(fn(q))
        times.append(time.perf_counter() - start)
    return times, results


def measure(
    queries: np.ndarray, ids: list[int], k: int, ef_values: list[int], loads: list[float], fanouts: list[int]
) -> dict[str, object]:
    """Exact search over every query first, then each ef_search value (the product's default
    first), each with every fan-out (connections the search is split across; 1: one
    statement). Not interleaved query by query: at 1,000,000 chunks an exact search reads the
    whole 2 GB table and would evict the per-source graphs before every indexed query."""
    from sources.retrieval import PgRetriever

    reference = PgRetriever()
    exact_times, exact_results = timed(lambda q: reference.exact_top_k_per_source(q, ids, k), queries)
    loads.append(os.getloadavg()[0])
    assert all(len(r[ids[0]]) == min(k, 4) for r in exact_results)  # the 4-chunk source
    exact_median = statistics.median(exact_times)
    print(f"  exact: median {1000 * exact_median:.1f} ms", flush=True)
    # One untimed pass first: the exact searches read the whole chunk table and evict the
    # per-source graphs from shared buffers; a serving database keeps them warm.
    warm = PgRetriever(ef_search=ef_values[0], fanout=1)
    for q in queries:
        warm.top_k_per_source(q, ids, k)
    configs = []
    for ef, fanout in ((ef, fanout) for ef in ef_values for fanout in fanouts):
        retriever = PgRetriever(ef_search=ef, fanout=fanout)
        shares = len(retriever.shares(ids))
        times, results = timed(partial(retriever.top_k_per_source, sources=ids, k=k), queries)
        loads.append(os.getloadavg()[0])
        found, short = recall(results, exact_results, k)
        configs.append(
            {
                "ef_search": ef,
                "fanout": shares,
                "median_ms": round(1000 * statistics.median(times), 2),
                "p95_ms": round(1000 * scratch_db.percentile(times, 0.95), 2),
                f"recall_at_{k}": round(found, 4),
                "sources_short_of_k": short,
                "speedup_vs_exact": round(exact_median / statistics.median(times), 2),
                "load_average": round(loads[-1], 1),
            }
        )
        print(f"  ef_search={ef} fanout={shares}: {configs[-1]}", flush=True)
    return {
        "queries": len(queries),
        "k": k,
        "exact_median_ms": round(1000 * exact_median, 2),
        "exact_p95_ms": round(1000 * scratch_db.percentile(exact_times, 0.95), 2),
        "configs": configs,
    }


def measure_first_round(queries: np.ndarray, ids: list[int], k: int, count: int) -> dict[str, object]:
    """One search over ``count`` of the sources, spread over the corpus (the 4-chunk one
    left out): what a ra-rag ask searches in its first κ-RRSS round (twice κ; most asks need
    no other), where it searched every source before (pipeline.PassagesAhead). Product
    defaults (ef_search, connections)."""
    from sources.retrieval import PgRetriever

    step = max(1, (len(ids) - 1) // count)
    chosen = ids[1::step][:count]
    retriever = PgRetriever()
    for q in queries[:5]:
        retriever.top_k_per_source(q, chosen, k)
    times, _ = timed(lambda q: retriever.top_k_per_source(q, chosen, k), queries)
    return {"sources": len(chosen), "median_ms": round(1000 * statistics.median(times), 2)}


def measure_pooled(queries: np.ndarray, k: int = 10) -> dict[str, float]:
    from sources.retrieval import PgRetriever

    retriever = PgRetriever()
    retriever.top_k_pooled(queries[0], k)
    times = []
    for q in queries:
        start = time.perf_counter()
        retriever.top_k_pooled(q, k)
        times.append(time.perf_counter() - start)
    return {"k": k, "median_ms": round(1000 * statistics.median(times), 2)}


def compare_partial_indexes(
    queries: np.ndarray, ids: list[int], sizes: list[int], k: int, ef: int
) -> dict[str, object]:
    """The design not taken: partial HNSW indexes on sources_chunk (WHERE source_id = s), one
    UNION ALL branch per source with its id written in. Measures its planning time and latency
    on the same data, then drops the indexes."""
    from django.db import connection

    from sources import vector_index
    from sources.retrieval import _vector_literal

    big = [(sid, size) for sid, size in zip(ids, sizes, strict=True) if vector_index.wants_index(size)]
    start = time.perf_counter()
    with connection.cursor() as cursor:
        for sid, _ in big:
            cursor.execute(
                f"CREATE INDEX partial_{sid} ON sources_chunk USING hnsw ((embedding::halfvec({DIM})) halfvec_cosine_ops) "
                f"WITH (m = {vector_index.HNSW_M}, ef_construction = {vector_index.HNSW_EF_CONSTRUCTION}) "
                f"WHERE source_id = {sid}"
            )
        cursor.execute("ANALYZE sources_chunk")
    build_s = time.perf_counter() - start
    branch = (
        "(SELECT {sid}::bigint, id FROM sources_chunk WHERE source_id = {sid} "
        f"ORDER BY embedding::halfvec({DIM}) <=> %(q)s::halfvec({DIM}) LIMIT {k})"
    )
    sql = " UNION ALL ".join(branch.format(sid=sid) for sid in ids)
    times, planning = [], []
    with connection.cursor() as cursor:
        cursor.execute(f"SET hnsw.ef_search = {int(ef)}")
        cursor.execute("SET hnsw.iterative_scan = off")  # as the product's per-source walks
        for n, q in enumerate(queries):
            params = {"q": _vector_literal(q)}
            if n < 10:
                cursor.execute("EXPLAIN (ANALYZE, SUMMARY, TIMING OFF, COSTS OFF) " + sql, params)
                line = next(r[0] for r in cursor.fetchall() if r[0].startswith("Planning Time"))
                planning.append(float(line.split(":")[1].split()[0]))
            start = time.perf_counter()
            cursor.execute(sql, params)
            cursor.fetchall()
            times.append(time.perf_counter() - start)
        cursor.execute("RESET hnsw.ef_search")
        cursor.execute("RESET hnsw.iterative_scan")
        for sid, _ in big:
            cursor.execute(f"DROP INDEX partial_{sid}")
    return {
        "partial_indexes": len(big),
        "build_s": round(build_s, 1),
        "planning_median_ms": round(statistics.median(planning), 1),
        "median_ms": round(1000 * statistics.median(times), 2),
    }
