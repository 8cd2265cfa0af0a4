"""Celery tasks of the RA-RAG engine: answering questions and estimation runs.

Thin shells over core.services; see core/services/estimation.py for how a run is split
into `tasks.generate_batch` tasks (queue "gpu") and a non-blocking coordinator.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from reliability_site.celery import app
from tasks.progress import JobProgress
from tasks.runner import JobFailed, job_task


@job_task("tasks.answer_question")
def answer_question(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    """Answer a stored Question through its strategy and persist the votes."""
    from core.models import Question
    from core.services.asking import answer_question as answer

    question = Question.objects.filter(pk=params["question_id"]).first()
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
def generate_batch(run_id: int, pairs: list[list[int]]) -> int:
    """Answer a batch of (query id, source id) pairs of a run (queue "gpu"); idempotent."""
    from core.services.estimation import fail_run
    from core.services.estimation import generate_batch as generate

    try:
        return generate(run_id, pairs)
    except Exception as exc:  # noqa: BLE001 - a broken backend must end the run, not hang it
        fail_run(run_id, exc)
        raise


@app.task(name="tasks.estimation_run", bind=True, acks_late=True)
def estimation_run(self: Any, job_id: int, step: int = 0) -> str:
    """Coordinate a run without blocking: dispatch missing batches, re-enqueue itself, and
    finish when every response is stored. Written by hand rather than with job_task because
    one Job spans several invocations (job_task would mark it done after the first)."""
    from core.models import EstimationRun
    from core.services.estimation import POLL_SECONDS, advance_run, fail_run
    from tasks.models import Job

    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return "gone"
    run = EstimationRun.objects.filter(job_id=job_id).first()
    if run is None:
        JobProgress(job_id).fail("The estimation run was deleted.")
        return "gone"
    if job.state == Job.State.PENDING:
        JobProgress(job_id).start(
            message="Started", celery_task_id=self.request.id or "", worker=self.request.hostname or ""
        )

    def reschedule() -> None:
        poll = float(getattr(settings, "ESTIMATION_POLL_SECONDS", POLL_SECONDS))
        estimation_run.apply_async(kwargs={"job_id": job_id, "step": step + 1}, queue="default", countdown=poll)

    def dispatch(pairs: list[list[int]]) -> None:
        generate_batch.apply_async(kwargs={"run_id": run.pk, "pairs": pairs}, queue="gpu")

    try:
        return advance_run(run, dispatch=dispatch, reschedule=reschedule)
    except Exception as exc:  # noqa: BLE001 - any error must end in the job record
        fail_run(run.pk, exc)
        return "failed"
