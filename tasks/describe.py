"""Jobs as a person reads them: what each job was about, with links to its question, run or
source, a one-line headline, and its parameters and result as labelled lines.

A job's record is written for the worker (ids, counters, nested dicts); the job pages show
`describe_jobs(jobs)` instead: a title such as "Question #15: Who wrote Dracula?" (the question's
number, never the job's), "Estimation run #3" or "Ingestion into wiki", links to the objects
the job worked on, and `readable(...)` lines ("New documents: 0", "Files: notes.csv: 0 new,
3 already held") instead of a Python dict. The titles, links and headlines come from the app
that owns each kind of job (runtime.jobs.JOB_TITLES: core's questions and runs, the sources
app's ingestions), so this module knows no app's models; related objects are read in one
query per kind for a whole page of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from core.engine.types import JSONObject, JSONValue
from runtime.jobs import JOB_HEADLINES, JOB_TITLES, JobTitle
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


@dataclass
class JobView:
    """What the job pages show of a job (itself a display-only copy: tasks.public.public_job)."""

    job: Job
    title: str
    headline: str
    links: list[Link]


def describe_jobs(jobs: list[Job]) -> list[JobView]:
    """Every job of a page with its title, headline and links: the app that owns each kind
    of job says how its jobs read (runtime.jobs.JOB_TITLES, one query per related kind);
    a kind no app describes reads as "<kind> job" with its own message."""
    by_kind: dict[str, list[Job]] = {}
    for job in jobs:
        by_kind.setdefault(str(job.kind), []).append(job)
    titles: dict[int, JobTitle] = {}
    for kind, of_kind in by_kind.items():
        if kind in JOB_TITLES:
            titles.update(JOB_TITLES.get(kind)(of_kind))
    return [_view(job, titles.get(job.pk)) for job in jobs]


def _view(job: Job, described: JobTitle | None) -> JobView:
    links = [Link(link.label, link.url) for link in described.links] if described else []
    result = job.result if isinstance(job.result, dict) else {}
    embed_job = result.get("embed_job")
    if isinstance(embed_job, int):
        links.append(Link(f"Key embedding job #{embed_job}", reverse("job-detail", args=[embed_job])))
    return JobView(
        job=job,
        title=described.title if described else f"{job.get_kind_display()} job",
        headline=headline(job),
        links=links,
    )


def headline(job: Job) -> str:
    """The line that sums the job up: what the job's app says from the record alone (a
    finished ingestion's new and held counts, whatever its stored message said), otherwise
    its message. No query: the polled job status shows it."""
    kind = str(job.kind)
    said = JOB_HEADLINES.get(kind)(job) if kind in JOB_HEADLINES else None
    return job.message if said is None else said
