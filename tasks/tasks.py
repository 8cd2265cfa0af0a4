"""Celery tasks. Each is a thin shell: the work lives in the apps' service functions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.json_values import as_int, as_list, as_object, as_str_list
from core.engine.types import JSONObject, JSONValue
from reliability_site.celery import app
from runtime.backends import configured_embedder
from sources.claim_loading import ClaimExtractionUnavailable, start_claim_key_embedding
from sources.claim_loading import extract_text_claims as extract_claims
from sources.claim_loading import load_claims as load
from sources.claim_store import embed_claim_keys as embed_keys
from sources.ingest import IngestError, expand_paths
from sources.models import Source
from sources.services import FileOutcome, IngestInterrupted, ingest_headline, reembed
from sources.services import ingest_files as ingest

# Engine and index tasks live in modules of their own; importing them registers them with Celery.
from tasks import engine_tasks, index_tasks  # noqa: F401
from tasks.jobs import reap_stale_jobs as reap
from tasks.jobs import remove_upload_dir
from tasks.models import Job
from tasks.progress import JobProgress
from tasks.runner import Done, JobFailed, job_task


@job_task("tasks.ingest_files")
def ingest_files(progress: JobProgress, params: JSONObject) -> Done:
    """Parse, chunk and embed files into a source; each file is stored whole or not at all.
    The job ends with what was new and what was held already ("0 new documents, 3 already held")."""
    source = Source.objects.get(pk=as_int(params["source_id"], "source_id"))
    try:
        files = expand_paths(as_str_list(params["paths"], "paths"))
    except IngestError as exc:
        raise JobFailed(str(exc)) from None
    progress.set_total(len(files), f"Loading the embedding model for {len(files)} file(s)")
    embedder = configured_embedder()

    def file_done(outcome: FileOutcome) -> None:
        if outcome.error:
            progress.log(f"rejected {outcome.error}")
        else:
            progress.log(
                f"{outcome.name}: {outcome.documents} new documents, {outcome.chunks} chunks, {outcome.duplicates} already held"
            )
        progress.advance(1, f"Processed {outcome.name}")

    def heartbeat(message: str) -> None:
        if not progress.heartbeat(message):  # the job was ended meanwhile (reaped): store no more under it
            raise JobFailed(f"Stopped: the job had already ended before {message.split(':')[0]} was stored.")

    try:
        outcomes = ingest(
            source,
            files,
            embedder,
            options=as_object(params.get("options")),
            job_id=progress.job_id,
            on_file_done=file_done,
            display_names={str(path): str(name) for path, name in as_object(params.get("display_names")).items()},
            heartbeat=heartbeat,
        )
    except IngestInterrupted as exc:
        remove_upload_dir(params)
        done: list[JSONValue] = [o.as_dict() for o in exc.outcomes]
        raise JobFailed(str(exc), {"source": source.name, "files": done, "interrupted": exc.name}) from exc
    except Exception:
        remove_upload_dir(params)
        raise
    # Not in a `finally`: a stop of the worker (SystemExit or KeyboardInterrupt from its signal)
    # gives the task back to the broker (tasks/shutdown.py), and the next start reads the files.
    remove_upload_dir(params)
    result: JSONObject = {
        "source": source.name,
        "files": [o.as_dict() for o in outcomes],
        "documents": sum(o.documents for o in outcomes),
        "chunks": sum(o.chunks for o in outcomes),
        "duplicates": sum(o.duplicates for o in outcomes),
    }
    rejected = [o.error for o in outcomes if o.error]
    if rejected:
        raise JobFailed(
            f"{len(rejected)} of {len(outcomes)} file(s) rejected, nothing of them stored:\n" + "\n".join(rejected),
            result,
        )
    return Done(result, message=ingest_headline(result))


@job_task("tasks.reembed_source")
def reembed_source(progress: JobProgress, params: JSONObject) -> JSONObject:
    """Recompute every chunk vector of the given sources with the configured model."""
    embedder = configured_embedder()
    return reembed([as_int(i, "source_ids") for i in as_list(params["source_ids"])], embedder, progress)


@dataclass(frozen=True)
class StoredFile:
    """An uploaded file as a claim load's params list it: its name and where the worker reads it."""

    name: str
    path: str


def _stored_files(value: JSONValue) -> list[StoredFile]:
    """The params' "files" ([{"name", "path"}], sources.claim_loading.parse_claim_files); KeyError or
    ValueError for anything else (the job fails)."""
    files = []
    for entry in as_list(value):
        if not isinstance(entry, dict):
            raise ValueError(f"files: expected {{'name', 'path'}}, got {entry!r}"[:200])
        name, path = entry["name"], entry["path"]
        if not isinstance(name, str) or not isinstance(path, str):
            raise ValueError("files: a file's name and path must be text")
        files.append(StoredFile(name, path))
    return files


@job_task("tasks.load_claims")
def load_claims(progress: JobProgress, params: JSONObject) -> JSONObject:
    """Load uploaded structured files as claims (all files or nothing), then start the job
    that embeds the new claim keys."""
    try:
        mapping = ClaimMapping.from_json(params["mapping"])
        files = []
        for entry in _stored_files(params["files"]):
            try:
                files.append((entry.name, Path(entry.path).read_bytes()))
            except OSError as exc:  # its message would name the server path
                raise IngestError(
                    f"cannot be read ({exc.strerror or type(exc).__name__})", filename=entry.name
                ) from None
        source: Source | str | None = None
        if params.get("source_id"):
            source = Source.objects.filter(pk=as_int(params["source_id"], "source_id")).first()
            if source is None:
                raise JobFailed(f"The source {params.get('source')!r} was deleted before the claims were loaded.")
        elif params.get("source"):
            source = str(params["source"])
        result = load(
            files,
            mapping,
            source=source,
            format_name=str(params.get("format") or "") or None,
            job=progress.job_id,
            progress=progress,
        )
    except (IngestError, MappingError) as exc:
        remove_upload_dir(params)
        raise JobFailed(f"Rejected, nothing stored: {exc}") from None
    except Exception:
        remove_upload_dir(params)
        raise
    remove_upload_dir(params)  # not on a stop of the worker: see ingest_files
    outcome: JSONObject = {**result.as_dict()}
    if result.created:
        owner = Job.objects.select_related("created_by").get(pk=progress.job_id).created_by
        job = start_claim_key_embedding(user=owner)
        outcome["embed_job"] = job.pk
        progress.log(f"Embedding the new claim keys: job {job.pk}")
    return outcome


@job_task("tasks.embed_claim_keys")
def embed_claim_keys(progress: JobProgress, params: JSONObject) -> Done | JSONObject:
    """Embed the (subject, attribute) keys of claims that have no embedding yet (multirag matching)."""
    progress.set_total(0, "Looking for claim keys without an embedding")

    def batch_done(done: int, total: int) -> None:
        progress.set_total(total)
        if not progress.heartbeat(f"Embedded {done} of {total} claim keys"):
            raise JobFailed("Stopped: the job had already ended.")
        progress.set_progress(done)

    outcome = embed_keys(None, on_batch=batch_done, exclusive=True)
    if outcome.get("skipped"):
        return Done(outcome, message=f"Nothing to do: {outcome['skipped']}")
    return outcome


@job_task("tasks.extract_text_claims")
def extract_text_claims(progress: JobProgress, params: JSONObject) -> JSONObject:
    """Claims from a source's documents by the configured language model."""
    source = Source.objects.filter(pk=as_int(params["source_id"], "source_id")).first()
    if source is None:
        raise JobFailed(f"The source {params.get('source')!r} was deleted before its claims were extracted.")
    try:
        result = extract_claims(source, job=progress.job_id, progress=progress)
    except ClaimExtractionUnavailable as exc:
        raise JobFailed(str(exc)) from None
    outcome: JSONObject = {"source": source.name, **result.as_dict()}
    if result.created:
        outcome["embed_job"] = start_claim_key_embedding().pk
    return outcome


@app.task(name="tasks.reap_stale_jobs", ignore_result=True)
def reap_stale_jobs() -> int:
    """Fail running jobs whose heartbeat is older than JOB_STALE_SECONDS (and their runs).
    Celery beat sends it every reap_interval() seconds (reliability_site/celery.py)."""
    return reap()
