"""Creating jobs, sending them to Celery, and reaping jobs whose worker died."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from pathlib import Path

from celery import Task
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core.engine.types import JSONObject, JSONValue
from core.models import EstimationRun, RunResponse
from core.roles import is_curator
from core.services.estimation import fail_runs_of_ended_jobs
from reliability_site.celery import app
from runtime.jobs import wait_for
from runtime.users import Actor, signed_in
from tasks.models import Job


def start_job(
    kind: str,
    task: Task[..., object] | str,
    params: JSONObject,
    /,
    *,
    user: Actor | None = None,
    queue: str | None = None,
) -> Job:
    """Persist a job and enqueue its task (a task or a task name) once the surrounding
    transaction commits. This is the dispatcher that runtime.jobs.dispatch_job calls."""
    task_name = task if isinstance(task, str) else task.name
    task_id = str(uuid.uuid4())
    job = Job.objects.create(
        kind=Job.Kind(kind),
        params=params,
        celery_task_id=task_id,
        created_by=signed_in(user),
        message="Waiting for a worker",
    )
    kwargs = {"job_id": job.pk}
    if queue:
        transaction.on_commit(lambda: app.send_task(task_name, kwargs=kwargs, task_id=task_id, queue=queue))
    else:
        transaction.on_commit(lambda: app.send_task(task_name, kwargs=kwargs, task_id=task_id))
    return job


def remove_upload_dir(params: JSONValue) -> None:
    """Delete a job's uploaded files (only ever a folder inside UPLOAD_DIR)."""
    upload_dir = params.get("upload_dir") if isinstance(params, dict) else None
    if (
        isinstance(upload_dir, str)
        and upload_dir
        and Path(upload_dir).resolve().is_relative_to(Path(settings.UPLOAD_DIR).resolve())
    ):
        shutil.rmtree(upload_dir, ignore_errors=True)


def remove_orphan_uploads(now: dt.datetime | None = None) -> int:
    """Delete upload folders that no unfinished job holds and that are older than the stale
    limit (a folder is written a moment before its job is stored): what failed, killed or
    reaped jobs left behind. Returns how many were removed."""
    root = Path(settings.UPLOAD_DIR)
    if not root.is_dir():
        return 0
    now = now or timezone.now()
    held = {
        str(Path(p).resolve())
        for p in Job.objects.filter(
            state__in=(Job.State.PENDING, Job.State.RUNNING), params__has_key="upload_dir"
        ).values_list("params__upload_dir", flat=True)
        if p
    }
    oldest = now.timestamp() - settings.JOB_STALE_SECONDS
    removed = 0
    for folder in root.iterdir():
        try:
            if not folder.is_dir() or str(folder.resolve()) in held or folder.stat().st_mtime > oldest:
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def _fail(jobs: QuerySet[Job], *, error: str, message: str, now: dt.datetime) -> int:
    """Fail these running jobs and delete their uploads (callers then fail the runs of ended jobs)."""
    ids = list(jobs.filter(state=Job.State.RUNNING).values_list("pk", flat=True))
    if not ids:
        return 0
    failed = Job.objects.filter(pk__in=ids, state=Job.State.RUNNING).update(
        state=Job.State.FAILED, error=error, message=message, finished_at=now
    )
    for params in Job.objects.filter(pk__in=ids, state=Job.State.FAILED).values_list("params", flat=True):
        remove_upload_dir(params)
    return failed


def reap_stale_jobs(now: dt.datetime | None = None) -> int:
    """Mark running jobs whose heartbeat stopped as failed, so none stays 'running' forever,
    fail the estimation runs of failed jobs, and delete uploads nobody will read. Run by the
    worker: on start and every reap_interval() seconds (the beat task `tasks.reap_stale_jobs`,
    on the question queue, which bulk work never fills), never by a page view."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.JOB_STALE_SECONDS)
    reaped = _fail(
        Job.objects.filter(heartbeat_at__lt=cutoff),
        error=f"The worker stopped reporting for more than {settings.JOB_STALE_SECONDS} s (worker lost or killed).",
        message="Failed: worker lost",
        now=now,
    )
    fail_runs_of_ended_jobs()
    remove_orphan_uploads(now)
    return reaped


def fail_jobs_of_worker(hostname: str, reason: str) -> int:
    """On worker start: whatever a worker of exactly this node name ("worker-1a2b@host") was
    running when it went down did not finish. Node names must be unique per live worker
    (scripts/run.sh gives each one a random name), or this would fail a live worker's jobs."""
    if not hostname:
        return 0
    failed = _fail(
        Job.objects.filter(worker=hostname), error=reason, message="Failed: worker restarted", now=timezone.now()
    )
    fail_runs_of_ended_jobs()
    return failed


def may_cancel(job: Job, user: Actor | None) -> bool:
    """Who may cancel a job: the person who started it, or a curator."""
    return bool(user and user.is_authenticated and (job.created_by_id == user.pk or is_curator(user)))


def cancel_job(job_id: int, *, by: str) -> bool:
    """End a pending or running job now, as failed with "Cancelled by <by>" (issue 38 row 11):
    its worker stops at its next heartbeat (long work checks between batches) and a pending
    one is skipped when a worker takes it; what the work stored so far is kept (an estimation
    run is marked failed, so it can be resumed from its stored responses); its uploads are
    deleted. False when the job had ended already."""
    now = timezone.now()
    with transaction.atomic():
        # The job's runs, locked: a worker storing a run's result takes the same lock, so the
        # run either finished first (then nothing is cancelled) or sees it failed after.
        states = set(EstimationRun.objects.select_for_update().filter(job_id=job_id).values_list("state", flat=True))
        if EstimationRun.State.SUCCEEDED in states:
            return False  # its work has just been stored: it ends succeeded
        cancelled = Job.objects.filter(pk=job_id, state__in=(Job.State.PENDING, Job.State.RUNNING)).update(
            state=Job.State.FAILED,
            error=f"Cancelled by {by}. What it had stored is kept; start it again (or resume its run) to go on.",
            message=f"Cancelled by {by}",
            finished_at=now,
        )
        if not cancelled:
            return False
        fail_runs_of_ended_jobs()
    remove_upload_dir(Job.objects.get(pk=job_id).params)
    return True


# Jobs whose work runs on the bulk worker's own queues (ingest) and reports as it goes.
BULK_KINDS = (Job.Kind.INGEST, Job.Kind.REEMBED, Job.Kind.DEMO)


def bulk_work_reporting() -> bool:
    """Whether the bulk worker shows it is alive and busy: a job of its queues reported within
    JOB_STALE_SECONDS, or some estimation run stored a response within ESTIMATION_STALL_SECONDS
    (another run's batches ahead in the queue). An estimation job's own heartbeat says nothing
    of the kind: its coordinator runs on the question worker."""
    now = timezone.now()
    cutoff = now - dt.timedelta(seconds=float(settings.JOB_STALE_SECONDS))
    if Job.objects.filter(kind__in=BULK_KINDS, state=Job.State.RUNNING, heartbeat_at__gte=cutoff).exists():
        return True
    recent = now - dt.timedelta(seconds=float(settings.ESTIMATION_STALL_SECONDS))
    return RunResponse.objects.filter(created_at__gte=recent).exists()


def fail_job_of_lost_process(job_id: int) -> int:
    """The pool process running this job died (the OOM killer, a crash in native code): the
    worker itself lives on and says so at once (WorkerLostError), so the job fails now
    instead of when the reaper notices its silence."""
    failed = _fail(
        Job.objects.filter(pk=job_id),
        error=(
            "The worker process running this job was killed (out of memory, or a crash) "
            "before it finished; nothing more was stored. Run it again, with less at once if it was large."
        ),
        message="Failed: worker process lost",
        now=timezone.now(),
    )
    fail_runs_of_ended_jobs()
    return failed


def wait_for_job(job_id: int, timeout: float | None = None, poll: float = 0.5) -> Job:
    """Block until the job finishes (for `--wait` and the API's wait timeout)."""
    job: Job = wait_for(Job.objects.get(pk=job_id), timeout, poll)
    return job
