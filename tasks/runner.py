"""Turn a plain function `fn(progress, params) -> result` into a Celery task bound to a Job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task

from reliability_site.celery import app
from tasks.models import Job
from tasks.progress import JobProgress

JobFunction = Callable[[JobProgress, dict[str, Any]], dict[str, Any] | None]


class JobFailed(Exception):
    """A job ends failed with this message, keeping a partial result for the record."""

    def __init__(self, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = result


def job_task(name: str, **options: Any) -> Callable[[JobFunction], Task]:
    def decorate(fn: JobFunction) -> Task:
        @app.task(name=name, bind=True, **options)
        def run(self: Task, job_id: int) -> None:
            job = Job.objects.filter(pk=job_id).first()
            if job is None or job.finished:
                return  # deleted, or a redelivery of a job that already ended
            progress = JobProgress(job_id)
            progress.start(message="Started", celery_task_id=self.request.id or "", worker=self.request.hostname or "")
            try:
                result = fn(progress, job.params)
            except JobFailed as exc:
                progress.fail(str(exc), result=exc.result)
            except Exception as exc:  # noqa: BLE001 - any error must end in the job record
                progress.fail(exc)
            else:
                progress.succeed(result or {})

        run.__doc__ = fn.__doc__
        return run

    return decorate
