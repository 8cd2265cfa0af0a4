"""Celery task of the per-source vector indexes: a thin shell over sources.vector_index."""

from __future__ import annotations

from core.engine.json_values import as_int
from core.engine.types import JSONObject
from sources import vector_index
from tasks.progress import JobProgress
from tasks.runner import Done, JobFailed, job_task


@job_task("tasks.build_source_index")
def build_source_index(progress: JobProgress, params: JSONObject) -> Done:
    """Copy a source's vectors into a table of its own and build its HNSW graph
    (CREATE INDEX CONCURRENTLY: ingestion and retrieval go on meanwhile)."""
    progress.set_total(0, f"Building the HNSW index of {params.get('source') or 'a source'}")
    try:
        outcome = vector_index.build(as_int(params["source_id"], "source_id"), heartbeat=progress.heartbeat)
    except Exception as exc:
        raise JobFailed(f"The HNSW index of {params.get('source') or 'the source'} failed: {exc}") from exc
    return Done(outcome.as_dict(), message=outcome.message)
