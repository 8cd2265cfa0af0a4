"""Celery signals that keep Job records truthful when a worker dies or restarts."""

from __future__ import annotations

import socket
from typing import Any

from celery.signals import worker_ready

from tasks.jobs import fail_jobs_of_worker, reap_stale_jobs


@worker_ready.connect
def _fail_jobs_left_running(sender: Any = None, **_: Any) -> None:
    hostname = getattr(sender, "hostname", None) or socket.gethostname()
    fail_jobs_of_worker(hostname, "The worker restarted while this job was running; run it again.")
    reap_stale_jobs()
