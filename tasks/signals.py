"""Celery signals that keep Job records truthful when a worker dies or restarts."""

from __future__ import annotations

from typing import Any

from celery.signals import worker_ready

from tasks.jobs import fail_jobs_of_worker, reap_stale_jobs


@worker_ready.connect
def _fail_jobs_left_running(sender: Any = None, **_: Any) -> None:
    """A worker starting under a node name fails the jobs still recorded as running under
    exactly that name (it went down while running them), then reaps stale jobs. A worker
    never touches another node name's jobs: a live worker's jobs stay alive."""
    fail_jobs_of_worker(
        getattr(sender, "hostname", None) or "", "The worker restarted while this job was running; run it again."
    )
    reap_stale_jobs()
