"""How the sources app's jobs read on the job pages: an ingestion, a claim load, a claim
extraction or a key embedding by its source, a re-embedding by its sources, the demo load
(runtime.jobs.JOB_TITLES), and a finished ingestion's headline (JOB_HEADLINES);
SourcesConfig.ready imports this module."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from core.engine.json_values import as_list, as_object
from core.engine.types import JSONObject
from runtime.jobs import JOB_HEADLINES, JOB_TITLES, JobLink, JobRecord, JobTitle
from sources.models import Source
from sources.services import ingest_headline


def is_file_ingestion(params: JSONObject) -> bool:
    """Documents from files (tasks.ingest_files): raw params name `paths`, public ones `files` (names)."""
    files = params.get("files")
    return "paths" in params or (isinstance(files, list) and all(isinstance(f, str) for f in files))


def is_claim_load(params: JSONObject) -> bool:
    return "mapping" in params


def _ids(values: Sequence[object]) -> set[int]:
    return {v for v in values if isinstance(v, int) and not isinstance(v, bool)}


def _sources(ids: set[int]) -> dict[int, Source]:
    return {s.pk: s for s in Source.objects.filter(pk__in=ids).only("id", "name")} if ids else {}


def _link(source: Source) -> JobLink:
    return JobLink(f"Source {source.name}", reverse("source-detail", args=[source.pk]))


@JOB_TITLES.register("ingest")
def ingestion_titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
    sources = _sources(_ids([as_object(job.params).get("source_id") for job in jobs]))
    titles: dict[int, JobTitle] = {}
    for job in jobs:
        params = as_object(job.params)
        source_id = params.get("source_id")
        found = sources.get(source_id) if isinstance(source_id, int) else None
        name = found.name if found is not None else str(params.get("source") or "a source")
        named = bool(params.get("source") or params.get("source_id"))
        if is_claim_load(params):
            title = f"Claim load into {name}" if named else "Claim load"
        elif is_file_ingestion(params):
            title = f"Ingestion into {name}"
        elif named:
            title = f"Claim extraction from {name}"
        else:
            title = "Claim key embedding"
        titles[job.pk] = JobTitle(title, (_link(found),) if found is not None else ())
    return titles


@JOB_HEADLINES.register("ingest")
def ingestion_headline(job: JobRecord) -> str | None:
    """A finished file ingestion's new and held counts, whatever its stored message said."""
    result = as_object(job.result)
    if job.succeeded and is_file_ingestion(as_object(job.params)) and isinstance(result.get("files"), list):
        return ingest_headline(result)
    return None


@JOB_TITLES.register("reembed")
def reembedding_titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
    sources = _sources({i for job in jobs for i in _ids(as_list(as_object(job.params).get("source_ids")))})
    titles: dict[int, JobTitle] = {}
    for job in jobs:
        ids = as_list(as_object(job.params).get("source_ids"))
        found = [sources[i] for i in ids if isinstance(i, int) and i in sources]
        title = "Re-embedding " + (", ".join(s.name for s in found) if found else f"{len(ids)} source(s)")
        titles[job.pk] = JobTitle(title, tuple(_link(s) for s in found))
    return titles


@JOB_TITLES.register("demo")
def demo_titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
    return {job.pk: JobTitle("Demo corpus") for job in jobs}
