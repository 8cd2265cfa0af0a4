"""How core's jobs read on the job pages: a question's job is titled by its question, an
estimation run's by its run (registered in runtime.jobs.JOB_TITLES; CoreConfig.ready
imports this module)."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse
from django.utils.text import Truncator

from core.engine.json_values import as_object
from core.models import EstimationRun, Question
from runtime.jobs import JOB_TITLES, JobLink, JobRecord, JobTitle


def _id(job: JobRecord, key: str) -> int | None:
    value = as_object(job.params).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@JOB_TITLES.register("ask")
def question_titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
    ids = {qid for job in jobs if (qid := _id(job, "question_id")) is not None}
    questions = {q.pk: q for q in Question.objects.filter(pk__in=ids).only("id", "text")} if ids else {}
    titles: dict[int, JobTitle] = {}
    for job in jobs:
        qid = _id(job, "question_id")
        question = questions.get(qid) if qid is not None else None
        if question is None:
            titles[job.pk] = JobTitle(f"Question #{qid} (deleted)" if qid else "Question")
            continue
        titles[job.pk] = JobTitle(
            f"Question #{question.pk}: {Truncator(question.text).chars(90)}",
            (JobLink(f"Question #{question.pk}", reverse("question-detail", args=[question.pk])),),
        )
    return titles


def _run_title(run: EstimationRun | None, run_id: int | None) -> str:
    if run is None:
        return f"Estimation run #{run_id} (deleted)" if run_id else "Estimation run"
    if run.kind == EstimationRun.Kind.CLAIMS:
        return f"Claim-level estimation run #{run.pk}"
    if run.kind == EstimationRun.Kind.UPDATE:
        return f"Incremental update run #{run.pk}"
    return f"Estimation run #{run.pk}"


@JOB_TITLES.register("estimate")
def run_titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
    ids = {rid for job in jobs if (rid := _id(job, "run_id")) is not None}
    runs = (
        {r.pk: r for r in EstimationRun.objects.filter(pk__in=ids).only("id", "kind", "parent_id", "job_id")}
        if ids
        else {}
    )
    titles: dict[int, JobTitle] = {}
    for job in jobs:
        rid = _id(job, "run_id")
        run = runs.get(rid) if rid is not None else None
        title = _run_title(run, rid)
        if run is None:
            titles[job.pk] = JobTitle(title)
            continue
        if run.job_id and run.job_id != job.pk:
            title += " (an earlier attempt: the run was resumed)"
        titles[job.pk] = JobTitle(title, (JobLink(f"Run #{run.pk}", reverse("run-detail", args=[run.pk])),))
    return titles
