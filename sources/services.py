"""Ingestion: parse, deduplicate, chunk, embed and store, one transaction per file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F

from core.engine.chunking import chunk_text
from core.engine.json_values import as_int, as_list
from core.engine.types import Embedder, JSONObject
from runtime.jobs import JobRecord, Progress, dispatch_job
from runtime.users import Actor
from sources.ingest import IngestError, ParsedDocument, expand_paths, parse_bytes, read_limited
from sources.models import Chunk, Document, Source, content_hash
from sources.uploads import keep_uploads
from sources.vector_index import request_build_after_commit


@dataclass
class FileOutcome:
    name: str
    documents: int = 0
    duplicates: int = 0
    chunks: int = 0
    error: str = ""

    def as_dict(self) -> JSONObject:
        return {
            "file": self.name,
            "documents": self.documents,
            "duplicates": self.duplicates,
            "chunks": self.chunks,
            "error": self.error,
        }


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def ingest_headline(result: JSONObject) -> str:
    """The one line an ingestion job ends with, from its result: what was new, what was held
    already, what was refused ("0 new documents, 3 already held (0 chunks) from 1 file"). A
    re-upload of known files must read as such, never as documents ingested."""
    files = [f for f in as_list(result.get("files")) if isinstance(f, dict)]
    rejected = sum(1 for f in files if f.get("error"))
    new = as_int(result.get("documents") or 0, "documents")
    held = as_int(result.get("duplicates") or 0, "duplicates")
    line = (
        f"{_count(new, 'new document', 'new documents')}, {held} already held "
        f"({_count(as_int(result.get('chunks') or 0, 'chunks'), 'chunk', 'chunks')}) from {_count(len(files), 'file', 'files')}"
    )
    if rejected:
        line += f"; {_count(rejected, 'file', 'files')} rejected"
    source = result.get("source")
    return f"{source}: {line}" if source else line


# Chunks embedded between two heartbeats: long files report progress (and stay alive for
# the stale-job reaper) every this many chunks. A heartbeat is also where a task stops when
# its worker is asked to stop (tasks/shutdown.py): 512 chunks took about 20 s on a bulk
# worker at nice 19 beside questions, longer than the run script's 15 s stop grace; 128 take
# about 5 s.
EMBED_CHUNKS_PER_HEARTBEAT = 128


class IngestInterrupted(Exception):
    """The database became unreachable while a file was being stored: nothing of that file was stored,
    the files before it are kept, and ingestion stops (the files after it are not tried)."""

    def __init__(self, name: str, error: BaseException, outcomes: list[FileOutcome]) -> None:
        first_line = (str(error).strip().splitlines() or [""])[0]
        super().__init__(
            f"{name}: the database failed while this file was being stored, so nothing of it was stored; "
            f"the files before it are kept, ingest it and the files after it again "
            f"({type(error).__name__}: {first_line})"
        )
        self.name = name
        self.outcomes = outcomes


def chunk_options(params: JSONObject) -> tuple[int, int]:
    size = as_int(params.get("chunk_size") or settings.CHUNK_SIZE_WORDS, "chunk_size")
    given = params.get("chunk_overlap")
    overlap = as_int(given if given is not None else settings.CHUNK_OVERLAP_WORDS, "chunk_overlap")
    return size, min(overlap, size - 1)


def store_documents(
    source: Source,
    documents: Sequence[ParsedDocument],
    embedder: Embedder,
    *,
    chunk_size: int,
    chunk_overlap: int,
    job_id: int | None = None,
    outcome: FileOutcome,
    on_embedded: Callable[[int, int], None] | None = None,
) -> FileOutcome:
    """Store new documents of one file atomically; texts already held by the source are skipped.

    Chunks are embedded EMBED_CHUNKS_PER_HEARTBEAT at a time, calling `on_embedded(done, total)`
    after each batch (a job's heartbeat); the file is then stored in one transaction."""
    unique: dict[str, ParsedDocument] = {}
    for doc in documents:
        unique.setdefault(content_hash(doc.text), doc)
    outcome.duplicates += len(documents) - len(unique)
    known = set(
        Document.objects.filter(source=source, content_hash__in=list(unique)).values_list("content_hash", flat=True)
    )
    fresh = {h: d for h, d in unique.items() if h not in known}
    outcome.duplicates += len(known)
    if not fresh:
        return outcome

    # Embed before opening the transaction: the model is the slow part, and holding a
    # row lock while it runs would stall concurrent ingestion into the same source.
    planned = [
        (h, doc, chunk_text(doc.text, chunk_size, chunk_overlap, settings.CHUNK_MAX_CHARS)) for h, doc in fresh.items()
    ]
    texts = [chunk.text for _, _, chunks in planned for chunk in chunks]
    parts = []
    for start in range(0, len(texts), EMBED_CHUNKS_PER_HEARTBEAT):
        parts.append(
            embedder.encode(texts[start : start + EMBED_CHUNKS_PER_HEARTBEAT], batch_size=settings.EMBEDDING_BATCH_SIZE)
        )
        if on_embedded is not None:
            on_embedded(min(start + EMBED_CHUNKS_PER_HEARTBEAT, len(texts)), len(texts))
    vectors = np.concatenate(parts) if parts else np.zeros((0, 0))

    with transaction.atomic():
        Source.objects.select_for_update().filter(pk=source.pk).first()  # serialise ingestion per source
        known_now = set(
            Document.objects.filter(source=source, content_hash__in=list(fresh)).values_list("content_hash", flat=True)
        )
        rows: list[Chunk] = []
        position = 0
        for digest, doc, chunks in planned:
            if digest in known_now:
                outcome.duplicates += 1
                position += len(chunks)
                continue
            metadata = dict(doc.metadata)
            metadata["provenance"] = doc.provenance
            stored = Document.objects.create(
                source=source,
                title=doc.title[:500],
                text=doc.text,
                url=doc.url,
                published_at=doc.published_at,
                metadata=metadata,
                content_hash=digest,
                job_id=job_id,
            )
            for chunk in chunks:
                rows.append(
                    Chunk(
                        document=stored,
                        source=source,
                        ordinal=chunk.ordinal,
                        text=chunk.text,
                        embedding=vectors[position],
                    )
                )
                position += 1
            outcome.documents += 1
        Chunk.objects.bulk_create(rows, batch_size=1000)
        Source.objects.filter(pk=source.pk).update(chunk_count=F("chunk_count") + len(rows))
        outcome.chunks += len(rows)
        if rows:  # past the threshold, the source gets an HNSW graph of its own (a job)
            transaction.on_commit(partial(request_build_after_commit, source.pk), robust=True)
    return outcome


def validate_uploads(files: Sequence[tuple[str, bytes]], options: JSONObject | None = None) -> list[int]:
    """Parse every file now (cheap, no model) so a form or API can reject bad input at once.

    Returns the number of documents per file; raises IngestError naming the file and line.
    """
    return [len(parse_bytes(data, name, options)) for name, data in files]


def ingest_files(
    source: Source,
    paths: Sequence[str | Path],
    embedder: Embedder,
    *,
    options: JSONObject | None = None,
    job_id: int | None = None,
    on_file_done: Callable[[FileOutcome], None] | None = None,
    display_names: dict[str, str] | None = None,
    heartbeat: Callable[[str], None] | None = None,
) -> list[FileOutcome]:
    """Ingest files one transaction each. A rejected file is recorded and the next one tried;
    a database failure raises IngestInterrupted naming the file (nothing of it stored).
    `heartbeat(message)` is called between embedding batches of a long file."""
    opts = dict(options or {})
    size, overlap = chunk_options(opts)
    outcomes: list[FileOutcome] = []
    for path in expand_paths(paths):
        name = (display_names or {}).get(str(path), path.name)
        outcome = FileOutcome(name=name)

        def embedded(done: int, total: int, name: str = name) -> None:
            if heartbeat is not None:
                heartbeat(f"{name}: embedded {done} of {total} chunks")

        try:
            try:
                data = read_limited(path)
            except OSError as exc:  # its message would name the server path
                raise IngestError(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
            documents = parse_bytes(data, name, opts)
            store_documents(
                source,
                documents,
                embedder,
                chunk_size=size,
                chunk_overlap=overlap,
                job_id=job_id,
                outcome=outcome,
                on_embedded=embedded,
            )
        except (OperationalError, InterfaceError) as exc:  # the database went away, not the file's fault
            raise IngestInterrupted(name, exc, outcomes) from exc
        except IngestError as exc:
            exc.filename = name  # the name the user gave, never the stored upload's path or name
            outcome = FileOutcome(name=name, error=exc.describe())
        outcomes.append(outcome)
        if on_file_done is not None:
            on_file_done(outcome)
    return outcomes


def reembed(
    source_ids: Sequence[int], embedder: Embedder, progress: Progress | None = None, batch: int = 512
) -> JSONObject:
    """Re-embed chunks in batches (after a model change); each batch commits on its own."""
    queryset = Chunk.objects.filter(source_id__in=source_ids).order_by("id")
    total = queryset.count()
    if progress is not None:
        progress.set_total(total, f"Re-embedding {total} chunks")
    done = 0
    last_id = 0
    while True:
        rows = list(queryset.filter(id__gt=last_id).only("id", "text")[:batch])
        if not rows:
            break
        vectors = embedder.encode([r.text for r in rows], batch_size=settings.EMBEDDING_BATCH_SIZE)
        for row, vector in zip(rows, vectors, strict=False):
            row.embedding = vector
        with transaction.atomic():
            Chunk.objects.bulk_update(rows, ["embedding"], batch_size=500)
        done += len(rows)
        last_id = rows[-1].id
        if progress is not None:
            progress.set_progress(done)
    return {"chunks": done, "model": embedder.name}


def start_ingest_job(
    source: Source,
    paths: Sequence[str | Path],
    *,
    options: JSONObject | None = None,
    user: Actor | None = None,
    display_names: dict[str, str] | None = None,
    upload_dir: str | None = None,
) -> JobRecord:
    """Create the ingestion job and enqueue it; returns at once (used by CLI, admin, API)."""
    params: JSONObject = {
        "source_id": source.pk,
        "source": source.name,
        "paths": [str(Path(p).resolve()) for p in paths],
        "options": options or {},
    }
    if display_names:
        params["display_names"] = {path: name for path, name in display_names.items()}
    if upload_dir:
        params["upload_dir"] = upload_dir
    return dispatch_job(kind="ingest", task_name="tasks.ingest_files", params=params, user=user, queue="ingest")


def start_upload_ingest(
    source: Source,
    blobs: Sequence[tuple[str, bytes]],
    *,
    options: JSONObject | None = None,
    user: Actor | None = None,
) -> JobRecord:
    """Keep uploaded files in DATA_DIR/uploads until the worker has ingested them."""
    folder, kept = keep_uploads(blobs)
    paths = [path for path, _ in kept]
    names = {str(path): name for path, name in kept}
    return start_ingest_job(source, paths, options=options, user=user, display_names=names, upload_dir=str(folder))
