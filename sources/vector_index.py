"""Per-source HNSW indexes: every big source gets a graph of its own.

Why: one HNSW graph over all chunks answers "the k nearest chunks *of source s*" badly. A
filtered walk must skip everyone else's chunks (and may run out before it finds k of a small
source), so PostgreSQL reads the source's rows and sorts them instead: exact search, no
faster than without the index. Partial indexes (``WHERE source_id = s``) fix the walk but
not the planning: every source's subquery weighs every partial index, so planning grows
with the square of the number of sources (about 180 ms at 200 sources, measured).

So a source with at least SOURCE_INDEX_MIN_CHUNKS chunks gets a table of its own,
``sources_chunkvec_<id>`` (chunk id, vector as halfvec: half the size, ranking re-checked
in float by sources/retrieval.py) with an HNSW index. Triggers on sources_chunk (migration
0004) keep it in step with every insert, re-embedding and delete, and drop it in the
transaction that deletes the source. The SQL function ``sources_chunk_top_k`` searches all
listed sources in one statement: ready tables by HNSW, every other source exactly (small
sources, and big ones while their table is built: slower, never wrong).

Lifecycle: ingestion calls `request_build` once its chunks are committed; past the
threshold a job (tasks.build_source_index) runs `build`. `reconcile` (``manage.py
source_indexes --reconcile``) builds what is missing and drops tables whose source is
gone; after `migrate`, sources past the threshold without an index get a build job. None of
it is in Django's migration state.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from core.engine.types import JSONObject
from runtime.jobs import JobRecord, KeepAlive, dispatch_job
from runtime.users import Actor
from sources.models import Source, SourceVectorIndex

logger = logging.getLogger(__name__)

TABLE_PREFIX = "sources_chunkvec_"
TABLE_PATTERN = re.compile(r"^sources_chunkvec_(\d+)$")
# Advisory-lock namespaces (high 32 bits of the key). SYNC: chunk writers hold it shared per
# source until they commit (the triggers of migration 0004 use the same number), a build's
# copy holds it exclusively. BUILD: one build of a source at a time, across workers.
SYNC_LOCK_NAMESPACE = 61505
BUILD_LOCK_NAMESPACE = 61506
# A graph built with a longer candidate list (pgvector's default is 64) reaches a recall
# with a shorter one at search time (0.97 recall@3 at ef_search 30 instead of 40 in the
# tuning runs of docs/performance.md), for twice the build time.
# 8 links per node instead of 16 built faster (241 s against 345 s at 1,000,000 chunks) but
# needed a longer candidate list for the same recall, for the same latency: no gain
# (docs/performance.md). Read at build time, so a benchmark may set another m here.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HALFVEC_MAX_INDEXED_DIMENSION = 4000  # pgvector's limit for an HNSW index on halfvec
HEARTBEAT_SECONDS = 30.0


def table_name(source_id: int) -> str:
    return f"{TABLE_PREFIX}{int(source_id)}"


def sync_lock_key(source_id: int) -> int:
    return (SYNC_LOCK_NAMESPACE << 32) + int(source_id)


def build_lock_key(source_id: int) -> int:
    return (BUILD_LOCK_NAMESPACE << 32) + int(source_id)


def min_chunks() -> int:
    return int(settings.SOURCE_INDEX_MIN_CHUNKS)


def indexable() -> bool:
    """Whether this embedding dimension can have an HNSW index at all (halfvec: up to 4,000)."""
    return int(settings.EMBEDDING_DIMENSION) <= HALFVEC_MAX_INDEXED_DIMENSION


def wants_index(chunk_count: int) -> bool:
    return indexable() and chunk_count >= min_chunks()


@dataclass
class BuildOutcome:
    source_id: int
    status: str  # built, exists, skipped
    chunks: int = 0
    copy_seconds: float = 0.0
    index_seconds: float = 0.0
    size_bytes: int = 0
    reason: str = ""

    @property
    def message(self) -> str:
        if self.status == "built":
            return (
                f"HNSW index of source {self.source_id}: {self.chunks} chunks in "
                f"{self.copy_seconds + self.index_seconds:.1f} s, {self.size_bytes / 2**20:.1f} MiB"
            )
        return f"Source {self.source_id}: {self.status} ({self.reason})" if self.reason else self.status

    def as_dict(self) -> JSONObject:
        return asdict(self)


def existing_tables() -> dict[int, str]:
    """{source id: table name} of every vector table in the current schema."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname ~ %s "
            "AND relnamespace = current_schema()::regnamespace",
            [TABLE_PATTERN.pattern],
        )
        names = [row[0] for row in cursor.fetchall()]
    return {int(TABLE_PATTERN.match(name).group(1)): name for name in names}  # type: ignore[union-attr]  # matches: the query selected only names of that pattern


def valid_index(source_id: int) -> bool:
    """Whether the source's table has a finished (valid) HNSW index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bool_and(i.indisvalid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND a.amname = 'hnsw'",
            [table_name(source_id)],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def table_size(source_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)", [table_name(source_id)])
        return int(cursor.fetchone()[0])


# --- Requests (cheap; called after ingestion commits) -----------------------------------------


def request_build(source_id: int, *, user: Actor | None = None) -> JobRecord | None:
    """Queue a build job when the source has grown past the threshold and has no index yet
    (nor one queued or being built); returns the job, or None when there is nothing to do."""
    source = Source.objects.filter(pk=source_id).only("id", "name", "chunk_count").first()
    if source is None or not wants_index(source.chunk_count):
        return None
    entry, created = SourceVectorIndex.objects.get_or_create(source=source)
    if not created:
        return None  # queued, building, ready, or failed (left for reconcile: no retry loop)
    return dispatch_job(
        kind="other",
        task_name="tasks.build_source_index",
        params={"source_id": source.pk, "source": source.name, "what": "vector index"},
        user=user,
        queue="ingest",  # beside ingestion: never in front of questions on the default queue
    )


def request_build_after_commit(source_id: int, *, attempts: int = 3) -> JobRecord | None:
    """`request_build` for an ingestion's on-commit hook: a deadlock or a lost connection
    (another backend rebuilding the table, say) is retried, then logged, never raised: the
    documents are stored already, and `reconcile` queues whatever build is still missing."""
    for attempt in range(1, attempts + 1):
        try:
            return request_build(source_id)
        except DatabaseError as error:
            if attempt == attempts:
                logger.warning("source %s: no index build queued (%s); reconcile will queue it", source_id, error)
                return None
            time.sleep(0.2 * attempt)
    return None


def request_missing_builds() -> int:
    """Queue a build for every source past the threshold without an index entry (after
    `migrate` on an existing database, say); returns how many were queued."""
    if not indexable():
        return 0
    ids = Source.objects.filter(chunk_count__gte=min_chunks(), vector_index__isnull=True).values_list("pk", flat=True)
    return sum(1 for source_id in list(ids) if request_build(source_id) is not None)


# --- Build and drop (a job or the management command) --------------------------------------------


def _set_state(source_id: int, state: str, **fields: object) -> None:
    SourceVectorIndex.objects.update_or_create(source_id=source_id, defaults={"state": state, **fields})


def build(source_id: int, *, heartbeat: Callable[[str], object] | None = None, rebuild: bool = False) -> BuildOutcome:
    """Create the source's vector table, copy its vectors and build the HNSW index.

    The copy runs under the exclusive sync lock (chunk writers of this source wait for it,
    then their trigger sees the table); the index is then built CONCURRENTLY, so ingestion
    and retrieval go on meanwhile (retrieval searches the source exactly until it is ready).
    Outside a transaction block only (a job, a command); ``rebuild`` replaces a ready one."""
    if connection.in_atomic_block:
        raise RuntimeError("build() runs CREATE INDEX CONCURRENTLY: call it outside transaction.atomic()")
    if not indexable():
        return BuildOutcome(source_id, "skipped", reason=f"{settings.EMBEDDING_DIMENSION} dimensions: no HNSW index")
    name = table_name(source_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [build_lock_key(source_id)])
        if not cursor.fetchone()[0]:
            return BuildOutcome(source_id, "skipped", reason="another build of this source is running")
    try:
        entry = SourceVectorIndex.objects.filter(source_id=source_id).first()
        if (
            entry is not None
            and entry.state == SourceVectorIndex.State.READY
            and valid_index(source_id)
            and not rebuild
        ):
            return BuildOutcome(source_id, "exists", chunks=entry.chunks)
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [sync_lock_key(source_id)])
            if not Source.objects.filter(pk=source_id).exists():
                return BuildOutcome(source_id, "skipped", reason="the source was deleted")
            _set_state(source_id, SourceVectorIndex.State.BUILDING, error="")
            cursor.execute(f"DROP TABLE IF EXISTS {name}")
            cursor.execute(
                f"CREATE TABLE {name} (chunk_id bigint PRIMARY KEY, "
                f"embedding halfvec({int(settings.EMBEDDING_DIMENSION)}) NOT NULL)"
            )
            cursor.execute(
                f"INSERT INTO {name} (chunk_id, embedding) "
                "SELECT id, embedding::halfvec FROM sources_chunk WHERE source_id = %s",
                [source_id],
            )
            chunks = cursor.rowcount
        copied = time.perf_counter()
        try:
            with (
                KeepAlive(heartbeat, f"Building the HNSW index of source {source_id}", every=HEARTBEAT_SECONDS),
                connection.cursor() as cursor,
            ):
                cursor.execute(
                    f"CREATE INDEX CONCURRENTLY {name}_hnsw ON {name} USING hnsw (embedding halfvec_cosine_ops) "
                    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                )
                cursor.execute(f"ANALYZE {name}")
        except Exception as exc:
            if not Source.objects.filter(pk=source_id).exists():
                # Deleted meanwhile (its delete and this build may deadlock, and the build
                # is the one cancelled): nothing failed that anyone still needs.
                drop(source_id)
                return BuildOutcome(source_id, "skipped", reason="the source was deleted")
            SourceVectorIndex.objects.filter(source_id=source_id).update(
                state=SourceVectorIndex.State.FAILED, error=str(exc)[:2000]
            )
            raise
        done = time.perf_counter()
        size = table_size(source_id)
        updated = SourceVectorIndex.objects.filter(source_id=source_id).update(
            state=SourceVectorIndex.State.READY,
            chunks=chunks,
            build_seconds=round(done - started, 3),
            size_bytes=size,
            error="",
        )
        if not updated:  # the source was deleted during the index build
            drop(source_id)
            return BuildOutcome(source_id, "skipped", reason="the source was deleted")
        return BuildOutcome(
            source_id,
            "built",
            chunks=chunks,
            copy_seconds=round(copied - started, 3),
            index_seconds=round(done - copied, 3),
            size_bytes=size,
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [build_lock_key(source_id)])


def drop(source_id: int) -> bool:
    """Drop the source's vector table and its entry; True when there was a table."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table_name(source_id)])
        existed = bool(cursor.fetchone()[0])
        cursor.execute(f"DROP TABLE IF EXISTS {table_name(source_id)}")
        SourceVectorIndex.objects.filter(source_id=source_id).delete()
    return existed


# --- Status and reconciliation ------------------------------------------------------------------


@dataclass
class SourceIndexStatus:
    source_id: int
    name: str
    chunks: int
    wanted: bool
    state: str  # ready, queued, building, failed, missing, none (below the threshold)
    size_bytes: int = 0


def status() -> list[SourceIndexStatus]:
    """Every source, whether it should have an index and what it has."""
    tables = existing_tables()
    entries = {e.source_id: e for e in SourceVectorIndex.objects.all()}
    rows = []
    for source in Source.objects.order_by("pk").only("id", "name", "chunk_count"):
        entry = entries.get(source.pk)
        wanted = wants_index(source.chunk_count)
        if entry is not None and (source.pk in tables or entry.state != SourceVectorIndex.State.READY):
            state = entry.state
        else:
            state = "missing" if wanted else "none"
        rows.append(
            SourceIndexStatus(
                source.pk, source.name, source.chunk_count, wanted, state, entry.size_bytes or 0 if entry else 0
            )
        )
    return rows


@dataclass
class ReconcileReport:
    built: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)

    def as_dict(self) -> JSONObject:
        return {
            "built": [*self.built],
            "dropped": [*self.dropped],
            "failed": {str(k): v for k, v in self.failed.items()},
        }


def plan_reconcile() -> tuple[list[int], list[int]]:
    """(sources to build, tables to drop): sources past the threshold without a ready, valid
    index, and tables whose source is gone."""
    tables = existing_tables()
    counts = dict(Source.objects.order_by("pk").values_list("pk", "chunk_count"))
    ready = set(
        SourceVectorIndex.objects.filter(state=SourceVectorIndex.State.READY).values_list("source_id", flat=True)
    )
    to_build = [
        pk
        for pk, count in counts.items()
        if wants_index(count) and not (pk in ready and pk in tables and valid_index(pk))
    ]
    to_drop = sorted(pk for pk in tables if pk not in counts)
    return to_build, to_drop


def reconcile(
    *, log: Callable[[str], object] = logger.info, heartbeat: Callable[[str], object] | None = None
) -> ReconcileReport:
    """Build every missing index and drop every orphaned table, one source at a time."""
    report = ReconcileReport()
    to_build, to_drop = plan_reconcile()
    for source_id in to_drop:
        drop(source_id)
        report.dropped.append(source_id)
        log(f"dropped {table_name(source_id)} (its source is gone)")
    for source_id in to_build:
        try:
            outcome = build(source_id, heartbeat=heartbeat, rebuild=True)
        except Exception as exc:  # noqa: BLE001 - one failed source must not stop the others
            report.failed[source_id] = str(exc)
            log(f"source {source_id}: failed: {exc}")
            continue
        if outcome.status == "built":
            report.built.append(source_id)
        log(outcome.message)
    return report
