"""One job lifecycle: turn a plain function `fn(progress, params)` into a Celery task bound to a Job.

The function's outcome decides what happens to the job (after NetBox's JobRunner):
- returns a result dict (or None): the job succeeds with it;
- returns `Done(result, message)`: the same, with a message other than "Done";
- raises `JobFailed(message, result)`: the job fails, keeping the partial result;
- raises any other exception: the job fails with the error;
- returns `Reschedule(countdown, params)`: the job is not done. It stays running, the new
  params (if any) are stored on the Job, and the same task is enqueued again for the same
  job after `countdown` seconds (a coordinator that polls without blocking a worker).
Whenever the job fails, `on_failure(job_id, params, error)` (if given) runs after the Job
record says so, to end what the job was working on (an estimation run, say).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from celery import Task
from celery.exceptions import Reject
from django.db import InterfaceError, OperationalError, close_old_connections, connection

from core.engine.types import JSONObject
from reliability_site.celery import app
from tasks.models import Job
from tasks.progress import JobProgress
from tasks.shutdown import GiveBack, give_back

logger = logging.getLogger(__name__)


class JobFailed(Exception):
    """A job ends failed with this message, keeping a partial result for the record."""

    def __init__(self, message: str, result: JSONObject | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class Done:
    """The job succeeded with `result`; `message` is shown on the job instead of "Done"."""

    result: JSONObject
    message: str = "Done"


@dataclass(frozen=True)
class Reschedule:
    """Not done yet: keep the job running, store `params` (when given) on it, and run this
    task again for the same job after `countdown` seconds."""

    countdown: float
    params: JSONObject | None = None


JobOutcome = JSONObject | Done | Reschedule | None
# A job function reads its params as the Job stored them: JSON, checked by the function.
JobFunction = Callable[[JobProgress, JSONObject], JobOutcome]
FailureHook = Callable[[int, JSONObject, BaseException | str], None]
# The Celery task a job function becomes: called with job_id (and a step), returns nothing.
JobTask: TypeAlias = "Task[..., None]"


def _reschedule(task: Task[..., object], job_id: int, step: int, outcome: Reschedule) -> None:
    if outcome.params is not None:
        Job.objects.filter(pk=job_id).update(params=outcome.params)
    # Back onto the queue this invocation came from (as Celery's own retry does).
    queue = (task.request.delivery_info or {}).get("routing_key") or None
    task.apply_async(kwargs={"job_id": job_id, "step": step + 1}, countdown=max(0.0, outcome.countdown), queue=queue)  # type: ignore[arg-type]  # None: the default queue


DB_RETRY_SECONDS = 5.0  # a step that lost the database runs again after this, then twice as long, up to a minute
DB_RETRY_MAX_SECONDS = 60.0
DB_ERRORS = (OperationalError, InterfaceError)


def _db_backoff(attempt: int) -> float:
    return float(min(DB_RETRY_MAX_SECONDS, DB_RETRY_SECONDS * 2.0 ** min(attempt, 4)))


def _retry_after_db_error(task: Task[..., object], job_id: int, step: int, *, next_step: int) -> None:
    """The database went away under a step: drop the broken connection and run the job again
    later as ``next_step`` (its dispatch state is the one the job stored last; nothing is
    written now)."""
    logger.warning(
        "job %s: the database is out of reach; step %s runs again in %.0f s", job_id, step, _db_backoff(step)
    )
    close_old_connections()
    with contextlib.suppress(*DB_ERRORS):
        connection.close()
    queue = (task.request.delivery_info or {}).get("routing_key") or None
    task.apply_async(kwargs={"job_id": job_id, "step": next_step}, countdown=_db_backoff(step), queue=queue)  # type: ignore[arg-type]  # None: the default queue


def job_task(
    name: str, *, on_failure: FailureHook | None = None, db_retry: bool = False, **options: Any
) -> Callable[[JobFunction], JobTask]:
    """Register `fn` as the Celery task `name` (options go to app.task, untyped in its
    stubs) running one Job.

    With ``db_retry`` (a coordinator that reschedules itself), a step that loses the database
    (OperationalError, InterfaceError: PostgreSQL restarting, a network blip) does not fail
    the job: the step runs again later with backoff (5 s doubling to a minute), touching
    nothing in the database until then, and the job goes on when the database is back (the
    reaper still fails it if the outage outlasts JOB_STALE_SECONDS)."""

    def decorate(fn: JobFunction) -> JobTask:
        @app.task(name=name, bind=True, **options)
        def run(self: JobTask, job_id: int, step: int = 0) -> None:
            try:
                job = Job.objects.filter(pk=job_id).first()
            except DB_ERRORS:
                if not db_retry:
                    raise
                _retry_after_db_error(self, job_id, step, next_step=step)  # not started yet: start then
                return
            if job is None or job.finished:
                return  # deleted, or a redelivery of a job that already ended
            progress = JobProgress(job_id)

            def fail(error: BaseException | str, result: JSONObject | None = None) -> None:
                progress.fail(error, result=result)
                if on_failure is not None:
                    try:
                        on_failure(job_id, job.params, error)
                    except Exception:
                        logger.exception("job %s: the failure hook of %s raised", job_id, name)

            if step == 0:  # a rescheduled invocation continues the running job
                progress.start(
                    message="Started", celery_task_id=self.request.id or "", worker=self.request.hostname or ""
                )
            try:
                outcome = fn(progress, job.params)
            except GiveBack:
                # The worker is stopping: the job waits for the next start, its message back
                # in the broker (what it stored is kept; it resumes from there).
                give_back({"job_id": job_id})
                logger.warning("job %s: given back to the broker, its worker is stopping", job_id)
                raise Reject(requeue=True) from None
            except JobFailed as exc:
                fail(str(exc), exc.result)
                return
            except DB_ERRORS as exc:
                if db_retry:
                    _retry_after_db_error(self, job_id, step, next_step=step + 1)
                else:
                    fail(exc)
                return
            except Exception as exc:  # noqa: BLE001 - any error must end in the job record
                fail(exc)
                return
            if isinstance(outcome, Reschedule):
                try:
                    _reschedule(self, job_id, step, outcome)
                except Exception as exc:  # noqa: BLE001 - a job that cannot go on must not stay running
                    fail(exc)
            elif isinstance(outcome, Done):
                progress.succeed(outcome.result, message=outcome.message)
            else:
                progress.succeed(outcome or {})

        run.__doc__ = fn.__doc__
        return cast("JobTask", run)  # app.task with **options: the overloads cannot tell

    return decorate
