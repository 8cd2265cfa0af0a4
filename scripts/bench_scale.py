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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402
from scale.corpus import ClusteredCorpus, calibrate, source_sizes  # noqa: E402
from scale.database import (  # noqa: E402
    BENCH_DB,
    build_global_index,
    build_identity,
    build_source_indexes,
    disk,
    kept_build,
    load,
    remember_build,
    setup,
)
from scale.measure import compare_partial_indexes, measure, measure_first_round, measure_pooled  # noqa: E402
from scale.report import plot, report  # noqa: E402


def run(args: argparse.Namespace) -> dict[str, object]:
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
    build: dict[str, object] | None = None
    build_id: str | None = None
    reused: dict[str, object] | None = None
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
