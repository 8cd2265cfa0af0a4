"""Jobs as a person reads them: what each job was about, with links to its question, run or
source, a one-line headline, and its parameters and result as labelled lines.

A job's record is written for the worker (ids, counters, nested dicts); the job pages show
`describe_jobs(jobs)` instead: a title such as "Question #15: Who wrote Dracula?" (the question's
number, never the job's), "Estimation run #3" or "Ingestion into wiki", links to the objects
the job worked on, and `readable(...)` lines ("New documents: 0", "Files: notes.csv: 0 new,
3 already held") instead of a Python dict. Related objects are read in one query per kind for
a whole page of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse
from django.utils.text import Truncator

from core.engine.types import JSONObject, JSONValue
from core.models import EstimationRun, Question
from sources.models import Source
from sources.services import ingest_headline
from tasks.models import Job

# Keys of a job's params that only the worker needs (the coordinator's dispatch state).
HIDDEN_PARAMS = frozenset({"dispatch"})

# How keys read, whatever the job; per-kind labels below take precedence.
LABELS = {
    "run_id": "Run",
    "question_id": "Question",
    "source_id": "Source id",
    "source_ids": "Sources",
    "gold_queries": "Gold-checked queries",
    "dependent_pairs": "Dependent pairs (p ≥ 0.5; copying unless the run is unsettled)",
    "embed_job": "Key embedding job",
    "k": "Passages per source (k)",
    "tau": "Alignment threshold (τ)",
    "use_gold": "Use reference answers",
    "batch_size": "Batch size",
}
# The order a record's keys read in (PostgreSQL's jsonb keeps its own); others follow by name.
ORDER = (
    "source",
    "run_id",
    "question_id",
    "answer",
    "confidence",
    "documents",
    "duplicates",
    "chunks",
    "files",
    "queries",
    "sources",
    "responses",
    "iterations",
    "converged",
    "gold_queries",
    "dependent_pairs",
    "scores",
)
KIND_LABELS: dict[str, dict[str, str]] = {
    Job.Kind.INGEST: {"documents": "New documents", "duplicates": "Already held", "files": "Files"},
    Job.Kind.ESTIMATE: {"sources": "Sources", "queries": "Queries", "responses": "Responses", "scores": "Scores"},
    Job.Kind.ASK: {"votes": "Source votes"},
}


@dataclass
class Line:
    """One readable line: "label: text", and below it the lines of a list or a nested record."""

    label: str
    text: str = ""
    items: list[Line] = field(default_factory=list)


@dataclass
class Link:
    label: str
    url: str


def _label(key: str, kind: str) -> str:
    labels = KIND_LABELS.get(kind, {})
    if key in labels:
        return labels[key]
    if key in LABELS:
        return LABELS[key]
    return key.replace("_", " ").capitalize()


def scalar(value: JSONValue) -> str:
    """A value as a person reads it: yes/no, numbers rounded to 3 decimals, "—" for nothing."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "—"
    return str(value)


def _record_text(record: JSONObject, kind: str) -> str:
    """A flat record on one line: "label value, label value"."""
    parts = []
    for key, value in record.items():
        if isinstance(value, dict | list):
            continue
        parts.append(f"{_label(key, kind).lower()} {scalar(value)}")
    return ", ".join(parts)


def _file_line(entry: JSONObject) -> Line:
    """An ingested file: "notes.csv: 0 new documents, 3 already held, 0 chunks" or its rejection."""
    name = str(entry.get("file") or entry.get("name") or "file")
    if entry.get("error"):
        return Line(name, f"rejected: {entry['error']}")
    if "documents" not in entry:  # a claim load's file: its name (its stored path is the worker's)
        return Line(name)
    return Line(
        name,
        f"{scalar(entry.get('documents', 0))} new documents, {scalar(entry.get('duplicates', 0))} already held, "
        f"{scalar(entry.get('chunks', 0))} chunks",
    )


def _score_line(entry: JSONObject) -> Line:
    """A source's score in a run: "wiki: reliability 0.8 [0.7, 0.9], weight 1.39, 12 answers (10 agree)"."""
    name = str(entry.get("source") or entry.get("source_id") or "source")
    text = f"reliability {scalar(entry.get('reliability'))}"
    if entry.get("low") is not None and entry.get("high") is not None:
        text += f" [{scalar(entry['low'])}, {scalar(entry['high'])}]"
    if entry.get("weight") is not None:
        text += f", weight {scalar(entry['weight'])}"
    if entry.get("answers") is not None:
        text += f", {scalar(entry['answers'])} answers ({scalar(entry.get('agreements', 0))} agree)"
    if entry.get("gold_answers"):
        text += f", {scalar(entry.get('gold_agreements', 0))}/{scalar(entry['gold_answers'])} right on gold"
    return Line(name, text)


ITEM_LINES = {"files": _file_line, "scores": _score_line}


def readable(value: JSONValue, kind: str = "", key: str = "") -> list[Line]:
    """The lines of a JSON value: a record's keys as labels, a list's items one per line
    (files and scores in their own words), nested records indented."""
    if isinstance(value, dict):
        lines = []
        rank = {key: i for i, key in enumerate(ORDER)}
        for name, item in sorted(value.items(), key=lambda kv: (rank.get(str(kv[0]), len(rank)), str(kv[0]))):
            label = _label(str(name), kind)
            if isinstance(item, dict):
                lines.append(Line(label, "" if item else "—", readable(item, kind, str(name))))
            elif isinstance(item, list):
                if all(not isinstance(v, dict | list) for v in item):
                    lines.append(Line(label, ", ".join(scalar(v) for v in item) or "none"))
                else:
                    lines.append(Line(label, "", readable(item, kind, str(name))))
            else:
                lines.append(Line(label, scalar(item)))
        return lines
    if isinstance(value, list):
        describe = ITEM_LINES.get(key)
        lines = []
        for index, item in enumerate(value, start=1):
            if isinstance(item, dict):
                lines.append(describe(item) if describe else Line(f"{index}", _record_text(item, kind)))
            elif isinstance(item, list):
                lines.append(Line(f"{index}", "", readable(item, kind)))
            else:
                lines.append(Line("", scalar(item)))
        return lines
    return [Line("", scalar(value))]


def result_lines(job: Job) -> list[Line]:
    """The job's result as readable lines ([] when it has none)."""
    result = job.result if isinstance(job.result, dict) else {}
    return readable(result, str(job.kind)) if result else []


def param_lines(job: Job) -> list[Line]:
    """The job's (public) parameters as readable lines, without the worker's internal state."""
    params = job.params if isinstance(job.params, dict) else {}
    return readable({k: v for k, v in params.items() if k not in HIDDEN_PARAMS}, str(job.kind))


def is_file_ingestion(params: JSONObject) -> bool:
    """Documents from files (tasks.ingest_files): raw params name `paths`, public ones `files` (names)."""
    files = params.get("files")
    return "paths" in params or (isinstance(files, list) and all(isinstance(f, str) for f in files))


def is_claim_load(params: JSONObject) -> bool:
    return "mapping" in params


@dataclass
class Related:
    """The objects a page of jobs refers to, read in one query per kind."""

    questions: dict[int, Question] = field(default_factory=dict)
    runs: dict[int, EstimationRun] = field(default_factory=dict)
    sources: dict[int, Source] = field(default_factory=dict)


def _ids(values: list[JSONValue]) -> set[int]:
    return {int(v) for v in values if isinstance(v, int) or (isinstance(v, str) and v.isdigit())}


def related_objects(jobs: list[Job]) -> Related:
    question_ids: set[int] = set()
    run_ids: set[int] = set()
    source_ids: set[int] = set()
    for job in jobs:
        params = job.params if isinstance(job.params, dict) else {}
        question_ids |= _ids([params.get("question_id")])
        run_ids |= _ids([params.get("run_id")])
        source_ids |= _ids([params.get("source_id")])
        if isinstance(params.get("source_ids"), list):
            source_ids |= _ids(params["source_ids"])
    related = Related()
    if question_ids:
        related.questions = {q.pk: q for q in Question.objects.filter(pk__in=question_ids).only("id", "text")}
    if run_ids:
        related.runs = {
            r.pk: r for r in EstimationRun.objects.filter(pk__in=run_ids).only("id", "kind", "parent_id", "job_id")
        }
    if source_ids:
        related.sources = {s.pk: s for s in Source.objects.filter(pk__in=source_ids).only("id", "name")}
    return related


def _run_title(run: EstimationRun | None, run_id: JSONValue) -> str:
    if run is None:
        return f"Estimation run #{run_id} (deleted)" if run_id else "Estimation run"
    if run.kind == EstimationRun.Kind.CLAIMS:
        return f"Claim-level estimation run #{run.pk}"
    if run.kind == EstimationRun.Kind.UPDATE:
        return f"Incremental update run #{run.pk}"
    return f"Estimation run #{run.pk}"


def _source(params: JSONObject, related: Related) -> tuple[str, Link | None]:
    """The name of the job's source and a link to its page (none once it is deleted)."""
    source_id = params.get("source_id")
    found = related.sources.get(source_id) if isinstance(source_id, int) else None
    if found is not None:
        return found.name, Link(f"Source {found.name}", reverse("source-detail", args=[found.pk]))
    return str(params.get("source") or "a source"), None


@dataclass
class JobView:
    """What the job pages show of a job (itself a display-only copy: tasks.public.public_job)."""

    job: Job
    title: str
    headline: str
    links: list[Link]


def describe(job: Job, related: Related) -> JobView:
    """The title, the headline and the links of one job."""
    params = job.params if isinstance(job.params, dict) else {}
    links: list[Link] = []
    title = f"{job.get_kind_display()} job"
    if job.kind == Job.Kind.ASK:
        qid = params.get("question_id")
        question = related.questions.get(qid) if isinstance(qid, int) else None
        if question is not None:
            title = f"Question #{question.pk}: {Truncator(question.text).chars(90)}"
            links.append(Link(f"Question #{question.pk}", reverse("question-detail", args=[question.pk])))
        else:
            title = f"Question #{qid} (deleted)" if qid else "Question"
    elif job.kind == Job.Kind.ESTIMATE:
        rid = params.get("run_id")
        run = related.runs.get(rid) if isinstance(rid, int) else None
        title = _run_title(run, rid)
        if run is not None:
            links.append(Link(f"Run #{run.pk}", reverse("run-detail", args=[run.pk])))
            if run.job_id and run.job_id != job.pk:
                title += " (an earlier attempt: the run was resumed)"
    elif job.kind == Job.Kind.INGEST:
        name, link = _source(params, related)
        if is_claim_load(params):
            title = f"Claim load into {name}" if params.get("source") or params.get("source_id") else "Claim load"
        elif is_file_ingestion(params):
            title = f"Ingestion into {name}"
        elif params.get("source_id") or params.get("source"):
            title = f"Claim extraction from {name}"
        else:
            title = "Claim key embedding"
        if link is not None:
            links.append(link)
    elif job.kind == Job.Kind.REEMBED:
        listed = params.get("source_ids")
        ids = listed if isinstance(listed, list) else []
        found = [related.sources[i] for i in ids if isinstance(i, int) and i in related.sources]
        title = "Re-embedding " + (", ".join(s.name for s in found) if found else f"{len(ids)} source(s)")
        links.extend(Link(f"Source {s.name}", reverse("source-detail", args=[s.pk])) for s in found)
    elif job.kind == Job.Kind.DEMO:
        title = "Demo corpus"
    result = job.result if isinstance(job.result, dict) else {}
    if isinstance(result.get("embed_job"), int):
        links.append(
            Link(f"Key embedding job #{result['embed_job']}", reverse("job-detail", args=[result["embed_job"]]))
        )
    return JobView(job=job, title=title, headline=headline(job), links=links)


def headline(job: Job) -> str:
    """The line that sums the job up: a finished ingestion's new and held counts (whatever its
    stored message said), otherwise its message."""
    result = job.result if isinstance(job.result, dict) else {}
    params = job.params if isinstance(job.params, dict) else {}
    if (
        job.kind == Job.Kind.INGEST
        and job.succeeded
        and is_file_ingestion(params)
        and isinstance(result.get("files"), list)
    ):
        return ingest_headline(result)
    return job.message


def describe_jobs(jobs: list[Job]) -> list[JobView]:
    """Every job of a page with its title, headline and links (one query per related kind)."""
    related = related_objects(jobs)
    return [describe(job, related) for job in jobs]
