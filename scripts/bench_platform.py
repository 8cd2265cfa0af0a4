"""Platform benchmark: ingestion throughput and per-source HNSW retrieval (not a test).

    .venv/bin/python scripts/bench_platform.py --out var/bench/platform.json

Runs against a scratch database `bench_platform` on the embedded PostgreSQL (dropped and
recreated at the start; the main database is never touched), or on the server named by
BENCH_DATABASE_URL (a URL whose database this script may drop and recreate).

(a) Ingestion: real texts (PoisonedRAG adv_texts, RAMDocs documents) are chunked the way
    ingestion chunks them; raw sentence-transformers encode throughput on those chunk texts
    is compared with the full path sources.services.ingest_files (read, parse, chunk,
    embed, store) on the same texts written as JSONL files.
(b) Retrieval: 20 sources over >= 100,000 chunks (real embeddings of real texts, plus small
    noise to reach the size; one tiny source), bulk-loaded with binary COPY, the all-chunks
    HNSW index built afterwards and every source past SOURCE_INDEX_MIN_CHUNKS given its own
    graph (sources.vector_index.build). PgRetriever.top_k_per_source is timed over ~200 real
    questions and compared with exact_top_k_per_source (recall@3, speed-up), for a few
    per-source hnsw.ef_search values. scripts/bench_scale.py measures the same at 1,000,000
    chunks on synthetic vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

BENCH_DB = "bench_platform"


def setup_django() -> None:
    scratch_db.setup_django(BENCH_DB)


def load_texts(limit_docs: int) -> tuple[list[str], list[str]]:
    """Real passages and real questions from the shared data sets."""
    passages: list[str] = []
    questions: list[str] = []
    for path in sorted(
        Path(__file__).resolve().parent.parent.joinpath("..", "shared", "data", "poisonedrag").glob("*.json")
    ):
        for item in json.loads(path.read_text(encoding="utf-8")).values():
            passages.extend(item.get("adv_texts", []))
            questions.append(item["question"])
    with open("/work/shared/data/ramdocs/RAMDocs_test.jsonl") as fh:
        for line in fh:
            item = json.loads(line)
            questions.append(item["question"])
            passages.extend(d["text"] for d in item.get("documents", []) if d.get("text", "").strip())
    # Interleave the two corpora so a prefix holds both kinds of text.
    seen: set[str] = set()
    unique = []
    for text in passages:
        key = " ".join(text.split())
        if key and key not in seen and "\x00" not in text:  # NUL is rejected by ingestion
            seen.add(key)
            unique.append(text)
    short = [t for t in unique if len(t.split()) < 80]
    long = [t for t in unique if len(t.split()) >= 80]
    mixed = [t for pair in zip(short, long, strict=False) for t in pair] + short[len(long) :] + long[len(short) :]
    return mixed[:limit_docs], questions


# --- (a) ingestion -----------------------------------------------------------------------------


def bench_ingestion(texts: list[str], files: int) -> dict[str, Any]:
    from django.conf import settings

    from core.engine.chunking import chunk_text
    from runtime.backends import configured_embedder
    from sources.models import Chunk, Source
    from sources.services import ingest_files

    embedder = configured_embedder()
    model = embedder._model  # type: ignore[attr-defined]  # the raw SentenceTransformer of the configured embedder
    size, overlap = settings.CHUNK_SIZE_WORDS, settings.CHUNK_OVERLAP_WORDS
    chunk_texts = [c.text for t in texts for c in chunk_text(t, size, overlap)]
    batch = settings.EMBEDDING_BATCH_SIZE
    model.encode(chunk_texts[:128], batch_size=batch, normalize_embeddings=True)  # warm-up

    def raw() -> float:
        start = time.perf_counter()
        model.encode(
            chunk_texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return time.perf_counter() - start

    raw_first = raw()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as folder:
        paths = []
        per_file = -(-len(texts) // files)
        for i in range(files):
            path = Path(folder) / f"part{i:02d}.jsonl"
            with path.open("w") as fh:
                for j, text in enumerate(texts[i * per_file : (i + 1) * per_file]):
                    fh.write(json.dumps({"text": text, "title": f"doc {i}-{j}"}) + "\n")
            paths.append(path)
        source = Source.objects.create(name="bench-ingest")
        start = time.perf_counter()
        outcomes = ingest_files(source, paths, embedder, options={"format": "jsonl"})
        full = time.perf_counter() - start
    raw_second = raw()  # again, so a neighbour's load on the shared CPU hits both sides alike
    errors = [o.error for o in outcomes if o.error]
    stored = Chunk.objects.filter(source=source).count()
    assert not errors, errors
    assert stored == len(chunk_texts), (stored, len(chunk_texts))
    raw_s = (raw_first + raw_second) / 2
    return {
        "documents": len(texts),
        "files": len(paths),
        "chunks": stored,
        "chunk_size_words": size,
        "chunk_overlap_words": overlap,
        "batch_size": batch,
        "raw_encode_s": [round(raw_first, 2), round(raw_second, 2)],
        "raw_encode_chunks_per_s": round(len(chunk_texts) / raw_s, 1),
        "ingest_s": round(full, 2),
        "ingest_chunks_per_s": round(stored / full, 1),
        "ratio": round(raw_s / full, 3),
    }


# --- (b) retrieval ---------------------------------------------------------------------------


def source_sizes(total: int, n_sources: int) -> list[int]:
    """A tiny source, a few small ones (searched exactly) and the rest big (HNSW), varying a little."""
    small = [4, 300, 1500, 3500]
    even = (total - sum(small)) // (n_sources - len(small))
    return scratch_db.source_sizes(total, n_sources, small, swing=min(1500, even // 3))


def load_corpus(
    base_vectors: np.ndarray, base_texts: list[str], total: int, n_sources: int, noise: float, seed: int = 11
) -> list[int]:
    import numpy as np
    from django.db import connection
    from pgvector.psycopg import register_vector

    from sources.models import Document, Source

    rng = np.random.default_rng(seed)
    sizes = source_sizes(total, n_sources)
    conn = connection.connection if connection.connection else (connection.ensure_connection() or connection.connection)  # type: ignore[func-returns-value]  # called to connect
    register_vector(conn)
    ids: list[int] = []
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    for index, size in enumerate(sizes):
        source = Source.objects.create(name=f"bench-src-{index:02d}", chunk_count=size)
        ids.append(source.pk)
        n_docs = max(1, size // 40)
        docs = Document.objects.bulk_create(
            [
                Document(
                    source=source, title=f"src{index} doc {d}", text=f"src{index} doc {d}", content_hash=f"{index}-{d}"
                )
                for d in range(n_docs)
            ]
        )
        picks = rng.integers(0, len(base_vectors), size)
        vectors = base_vectors[picks] + rng.standard_normal((size, base_vectors.shape[1])).astype(np.float32) * noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        scratch_db.copy_chunks(
            conn,
            (
                (docs[i % n_docs].pk, source.pk, i // n_docs, base_texts[picks[i]][:300], vectors[i])
                for i in range(size)
            ),
        )
    conn.commit() if not conn.autocommit else None
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '2GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON sources_chunk USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute("ANALYZE sources_chunk")
        cursor.execute("ANALYZE sources_source")
    load_corpus.index_build_s = time.perf_counter() - start  # type: ignore[attr-defined]  # read by main
    start = time.perf_counter()
    from sources import vector_index

    built = [vector_index.build(sid) for sid, size in zip(ids, sizes, strict=True) if vector_index.wants_index(size)]
    assert all(b.status == "built" for b in built), built
    load_corpus.source_graphs = len(built)  # type: ignore[attr-defined]  # read by main
    load_corpus.source_index_build_s = time.perf_counter() - start  # type: ignore[attr-defined]  # read by main
    return ids


def bench_retrieval(queries: np.ndarray, ids: list[int], k: int, ef_values: list[int]) -> dict[str, Any]:
    from sources.retrieval import PgRetriever

    reference = PgRetriever()
    exact_times: list[float] = []
    exact_results = []
    for q in queries:
        start = time.perf_counter()
        exact_results.append(reference.exact_top_k_per_source(q, ids, k))
        exact_times.append(time.perf_counter() - start)
    assert all(len(r[i]) == min(k, 4 if i == ids[0] else k) for r in exact_results for i in ids)

    configs = []
    for ef in ef_values:
        retriever = PgRetriever(ef_search=ef)
        retriever.top_k_per_source(queries[0], ids, k)  # warm
        times, hits, total, short = [], 0, 0, 0
        for q, exact in zip(queries, exact_results, strict=False):
            start = time.perf_counter()
            result = retriever.top_k_per_source(q, ids, k)
            times.append(time.perf_counter() - start)
            for sid in ids:
                want = {p.chunk_id for p in exact[sid]}
                got = [p.chunk_id for p in result[sid]]
                short += len(got) < len(want)
                hits += len(want & set(got))
                total += len(want)
        configs.append(
            {
                "ef_search": ef,
                "median_ms": round(1000 * statistics.median(times), 2),
                "p95_ms": round(1000 * scratch_db.percentile(times, 0.95), 2),
                "recall_at_k": round(hits / total, 4),
                "sources_short_of_k": short,
                "speedup_vs_exact": round(statistics.median(exact_times) / statistics.median(times), 1),
            }
        )
        print(f"  ef_search={ef}: {configs[-1]}", flush=True)
    return {
        "queries": len(queries),
        "k": k,
        "exact_median_ms": round(1000 * statistics.median(exact_times), 2),
        "exact_p95_ms": round(1000 * scratch_db.percentile(exact_times, 0.95), 2),
        "configs": configs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="write the results as JSON here")
    parser.add_argument("--ingest-docs", type=int, default=1200, help="documents for the ingestion benchmark")
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks in the retrieval corpus")
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--noise", type=float, default=0.03, help="per-dimension noise added to real vectors")
    parser.add_argument("--ef", default="60,30,100", help="per-source hnsw.ef_search values to compare")
    args = parser.parse_args()

    began = time.perf_counter()
    setup_django()
    import numpy as np
    import torch
    from django.conf import settings

    texts, questions = load_texts(args.ingest_docs)
    print(f"(a) ingestion: {len(texts)} documents", flush=True)
    ingestion = bench_ingestion(texts, args.files)
    print(f"  {ingestion}", flush=True)

    from runtime.backends import configured_embedder
    from sources.models import Chunk

    embedder = configured_embedder()
    stored = list(Chunk.objects.values_list("text", "embedding"))
    base_texts = [t for t, _ in stored]
    base_vectors = np.asarray([np.asarray(v, dtype=np.float32) for _, v in stored])
    rng = np.random.default_rng(3)
    chosen = [questions[i] for i in rng.choice(len(questions), size=min(args.queries, len(questions)), replace=False)]
    queries = embedder.encode(chosen)

    print(f"(b) retrieval: loading {args.chunks} chunks into {args.sources} sources", flush=True)
    start = time.perf_counter()
    ids = load_corpus(base_vectors, base_texts, args.chunks, args.sources, args.noise)
    load_s = time.perf_counter() - start
    # The ingestion benchmark's source stays in the table (more chunks, not searched).
    total_chunks = Chunk.objects.count()
    sizes = source_sizes(args.chunks, args.sources)
    print(f"  loaded in {load_s:.1f} s (HNSW build {load_corpus.index_build_s:.1f} s)", flush=True)  # type: ignore[attr-defined]  # set by load_corpus
    retrieval = bench_retrieval(queries, ids, 3, [int(x) for x in args.ef.split(",")])
    retrieval.update(
        {
            "chunks_in_table": total_chunks,
            "source_sizes": sizes,
            "noise_per_dim": args.noise,
            "load_s": round(load_s, 1),
            "hnsw_build_s": round(load_corpus.index_build_s, 1),  # type: ignore[attr-defined]  # set by load_corpus
            "source_graphs": load_corpus.source_graphs,  # type: ignore[attr-defined]  # set by load_corpus
            "source_index_build_s": round(load_corpus.source_index_build_s, 1),  # type: ignore[attr-defined]  # set by load_corpus
        }
    )

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        pg_version, pgvector_version = cursor.fetchone()
    machine = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "gpu": torch.cuda.is_available(),
        "python": platform.python_version(),
        "postgres": pg_version.split(",")[0],
        "pgvector": pgvector_version,
        "embedding_model": embedder.name,
        "hnsw": "m=16, ef_construction=64; per source: halfvec, candidates 2k re-ranked in float",
        "settings_source_index_ef_search": settings.SOURCE_INDEX_EF_SEARCH,
    }
    report = {
        "machine": machine,
        "ingestion": ingestion,
        "retrieval": retrieval,
        "total_s": round(time.perf_counter() - began, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))

    print()
    print(
        f"Machine: {machine['cpus']} CPUs, {machine['memory_gib']} GiB, GPU: {machine['gpu']}; "
        f"{machine['postgres']}, pgvector {machine['pgvector']}"
    )
    print()
    print("| ingestion | chunks | seconds | chunks/s |")
    print("|---|---:|---:|---:|")
    print(
        f"| raw sentence-transformers encode | {ingestion['chunks']} | {sum(ingestion['raw_encode_s']) / 2:.1f} | {ingestion['raw_encode_chunks_per_s']} |"
    )
    print(
        f"| ingest_files (parse, chunk, embed, store) | {ingestion['chunks']} | {ingestion['ingest_s']} | {ingestion['ingest_chunks_per_s']} |"
    )
    print(f"| **ratio** (goal >= 0.9) | | | **{ingestion['ratio']}** |")
    print()
    print(
        f"Retrieval: {args.sources} sources, {total_chunks} chunks, top-3, {len(queries)} queries; "
        f"exact search median {retrieval['exact_median_ms']} ms, p95 {retrieval['exact_p95_ms']} ms"
    )
    print()
    print(f"{retrieval['source_graphs']} sources searched by a graph of their own, the others exactly")
    print("| ef_search | median ms | p95 ms | recall@3 | sources short of k | speed-up vs exact |")
    print("|---:|---:|---:|---:|---:|---:|")
    for c in retrieval["configs"]:
        print(
            f"| {c['ef_search']} | {c['median_ms']} | {c['p95_ms']} | {c['recall_at_k']} | "
            f"{c['sources_short_of_k']} | {c['speedup_vs_exact']}x |"
        )
    print(f"\nTotal {report['total_s']} s; JSON written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
