"""Creating jobs, sending them to Celery, and reaping jobs whose worker died."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from celery import Task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.services.estimation import fail_runs_of_ended_jobs
from core.services.jobs import wait_for
from reliability_site.celery import app
from tasks.models import Job


def start_job(
    kind: str, task: Task | str, params: dict[str, Any], /, *, user: Any = None, queue: str | None = None
) -> Job:
    """Persist a job and enqueue its task (a task or a task name) once the surrounding
    transaction commits. This is the dispatcher that core.services.jobs.dispatch_job calls."""
    task_name = task if isinstance(task, str) else task.name
    task_id = str(uuid.uuid4())
    job = Job.objects.create(
        kind=Job.Kind(kind),
        params=params,
        celery_task_id=task_id,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        message="Waiting for a worker",
    )
    options: dict[str, Any] = {"kwargs": {"job_id": job.pk}, "task_id": task_id}
    if queue:
        options["queue"] = queue
    transaction.on_commit(lambda: app.send_task(task_name, **options))
    return job


def reap_stale_jobs(now: dt.datetime | None = None) -> int:
    """Mark running jobs whose heartbeat stopped as failed, so none stays 'running' forever,
    and fail the estimation runs of failed jobs. Run by the worker: on start and every
    reap_interval() seconds (the beat task `tasks.reap_stale_jobs`), never by a page view."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.JOB_STALE_SECONDS)
    reaped = Job.objects.filter(state=Job.State.RUNNING, heartbeat_at__lt=cutoff).update(
        state=Job.State.FAILED,
        error=f"The worker stopped reporting for more than {settings.JOB_STALE_SECONDS} s (worker lost or killed).",
        message="Failed: worker lost",
        finished_at=now,
    )
    fail_runs_of_ended_jobs()
    return reaped


def fail_jobs_of_worker(hostname: str, reason: str) -> int:
    """On worker start: whatever a worker of exactly this node name ("worker-1a2b@host") was
    running when it went down did not finish. Node names must be unique per live worker
    (scripts/run.sh gives each one a random name), or this would fail a live worker's jobs."""
    if not hostname:
        return 0
    failed = Job.objects.filter(state=Job.State.RUNNING, worker=hostname).update(
        state=Job.State.FAILED, error=reason, message="Failed: worker restarted", finished_at=timezone.now()
    )
    fail_runs_of_ended_jobs()
    return failed


def wait_for_job(job_id: int, timeout: float | None = None, poll: float = 0.5) -> Job:
    """Block until the job finishes (for `--wait` and the API's wait timeout)."""
    job: Job = wait_for(Job.objects.get(pk=job_id), timeout, poll)
    return job
