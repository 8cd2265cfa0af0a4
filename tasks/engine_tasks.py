"""Celery tasks of the RA-RAG engine: answering questions, estimation runs and claim-level runs.

Thin shells over core.services; see core/services/estimation/ for how a run is split into
`tasks.generate_batch` tasks (queue "gpu") and a coordinator that reschedules itself
(queue "default") until every response is stored.
"""

from __future__ import annotations

from collections.abc import Mapping

from celery.exceptions import Reject
from django.conf import settings

from core.engine.json_values import as_int
from core.engine.types import JSONObject
from core.models import EstimationRun, Question
from core.services.asking import answer_question as answer
from core.services.estimation import (
    claim_run_message,
    coordinate_run,
    dispatch_json,
    dispatch_state,
    fail_run,
    finish_once,
    finished_message,
    run_claim_estimation,
)
from core.services.estimation import generate_batch as generate
from reliability_site.celery import app
from tasks.jobs import bulk_work_reporting
from tasks.progress import JobProgress
from tasks.runner import Done, JobFailed, JobOutcome, Reschedule, job_task
from tasks.shutdown import GiveBack


@job_task("tasks.answer_question")
def answer_question(progress: JobProgress, params: JSONObject) -> JSONObject:
    """Answer a stored Question through its strategy and persist the votes."""
    question = Question.objects.filter(pk=as_int(params["question_id"], "question_id")).first()
    if question is None:
        raise JobFailed("The question was deleted before it could be answered.")
    answer(question, progress)
    return {
        "question_id": question.pk,
        "answer": question.answer,
        "confidence": question.confidence,
        "backend": question.backend,
        "votes": question.votes.count(),
    }


@app.task(name="tasks.generate_batch", acks_late=True)
def generate_batch(run_id: int, pairs: list[list[int]], lost: int = 0) -> int:
    """Answer a batch of (query id, source id) pairs of a run (queue "gpu") on any worker;
    idempotent, and claimed so two workers never answer it at once. Each batch is a
    heartbeat of the run's job and raises its progress. `lost`: how many pool processes died
    answering it before (tasks.signals sends it again at once, counting)."""
    job_id = EstimationRun.objects.filter(pk=run_id).values_list("job_id", flat=True).first()
    progress = JobProgress(job_id) if job_id else None
    try:
        return generate(run_id, pairs, progress, heartbeat=progress.heartbeat if progress else None)
    except GiveBack:  # the worker is stopping: the batch goes back to the broker
        raise Reject(requeue=True) from None
    except Exception as exc:
        job_id = fail_run(run_id)
        if job_id is not None:
            JobProgress(job_id).fail(exc)
        raise


# A batch whose pool process died this many times fails its run: the batch itself kills it
# (out of memory on its prompts, a crash in the model); a resume with smaller batches can go on.
MAX_BATCH_LOSSES = 3


def resend_lost_batch(kwargs: Mapping[str, object]) -> bool:
    """The pool process answering a batch died (SIGKILL, the OOM killer): its message was
    acknowledged with it, so the batch is sent again now (counting in `lost`) rather than when
    the run's coordinator finds nothing stored for ESTIMATION_STALL_SECONDS; the third loss of
    one batch fails the run's job, saying why. Returns whether the batch was sent again."""
    run_id, pairs, lost = kwargs.get("run_id"), kwargs.get("pairs"), kwargs.get("lost", 0)
    if not (isinstance(run_id, int) and isinstance(pairs, list) and isinstance(lost, int)):
        return False
    if lost + 1 >= MAX_BATCH_LOSSES:
        job_id = fail_run(run_id)
        if job_id is not None:
            JobProgress(job_id).fail(
                f"A worker process died {lost + 1} times answering the same batch of this run ({len(pairs)} "
                "(query, source) pairs): out of memory, or a crash in the model. Its stored responses are "
                "kept: resume the run, with a smaller batch size if memory is short."
            )
        return False
    generate_batch.apply_async(kwargs={"run_id": run_id, "pairs": pairs, "lost": lost + 1}, queue="gpu")
    return True


def _fail_the_run(job_id: int, params: JSONObject, error: BaseException | str) -> None:
    """The coordinator's job failed: so did its run (if the run still belongs to this job)."""
    run_id = EstimationRun.objects.filter(job_id=job_id).values_list("pk", flat=True).first()
    if run_id is not None:
        fail_run(run_id)


@job_task("tasks.estimation_run", acks_late=True, on_failure=_fail_the_run, db_retry=True)
def estimation_run(progress: JobProgress, params: JSONObject) -> JobOutcome:
    """Coordinate a run without blocking: send the missing batches, reschedule itself every
    ESTIMATION_POLL_SECONDS with the dispatch state stored on the Job, and finish (estimate
    and store the scores) when every response is stored, once even if two steps of the job
    run at the same time on two workers (a redelivered message)."""
    run = EstimationRun.objects.filter(job_id=progress.job_id).first()
    if run is None:
        raise JobFailed("The estimation run was deleted.")
    poll = float(settings.ESTIMATION_POLL_SECONDS)
    step = coordinate_run(
        run, dispatch_state(params.get("dispatch")), progress, bulk_work_reporting=bulk_work_reporting
    )
    if step.stalled:
        raise JobFailed(step.reason)
    if step.finished:
        summary = finish_once(run, progress)
        if summary is None:  # another step of this job is estimating the run right now
            return Reschedule(countdown=poll)
        return Done(summary, message=finished_message(summary))
    for pairs in step.send:
        generate_batch.apply_async(kwargs={"run_id": run.pk, "pairs": pairs}, queue="gpu")
    return Reschedule(countdown=poll, params={**params, "dispatch": dispatch_json(step.dispatch)})


@job_task("tasks.claim_estimation", acks_late=True, on_failure=_fail_the_run)
def claim_estimation(progress: JobProgress, params: JSONObject) -> JobOutcome:
    """Resolve a claim-level run's claims and estimate its sources in one step (reading,
    estimating, storing: seconds even for tens of thousands of claims); its failure fails the run."""
    run = EstimationRun.objects.filter(job_id=progress.job_id).first()
    if run is None:
        raise JobFailed("The claim estimation run was deleted.")
    summary = run_claim_estimation(run, progress)
    return Done(summary, message=claim_run_message(summary))
