"""A task cut short by a stop of its worker goes back to the broker; only a lost process fails it.

A service manager stops the run script by sending SIGTERM to every process of it, the pool
processes included, and a pool process dies of it at once (Celery resets SIGTERM in its pool
processes), in the middle of its task. Celery then reports the task as lost with its process
(WorkerLostError), exactly as when the OOM killer takes it, and (task_reject_on_worker_lost
off) acknowledges its message: the task was gone, and tasks.signals failed its job and deleted
its upload, so the restart had nothing to take up (issue 38 rows 2-4).

Here a loss while the worker is stopping (warm or cold shutdown has begun in the worker's
main process) is not a failure: the message goes back to the broker (rejected with requeue),
and the task's job is marked given back (pending, no heartbeat, no worker), so neither the
reaper nor the next worker's start fails it, and its uploaded files stay for the next start.
A loss while the worker is not stopping (the OOM killer, a crash) is what it was: the job
fails at once (tasks.signals), its message acknowledged, so a task that kills its process
never loops.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Mapping
from types import FrameType

from billiard.einfo import ExceptionInfo
from billiard.exceptions import WorkerLostError
from celery.worker import state
from celery.worker.request import Request
from django.db import DatabaseError

logger = logging.getLogger(__name__)
GIVEN_BACK = "Given back at a stop of its worker: the next worker to start takes it up again"

# In a pool process: a stop was asked for (SIGTERM) while a task ran, and whether one runs now.
STOP = threading.Event()
TASK_RUNNING = threading.Event()


class GiveBack(BaseException):
    """Raised at a long task's next checkpoint (a job's heartbeat) once its pool process was
    asked to stop: the runner gives the job back and the task's message back to the broker.
    A BaseException, so that no `except Exception` of the work treats it as a failure (an
    ingestion deleting its upload, say)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A pool process asked to stop (the group's SIGTERM from a service manager, or the
    worker's cold shutdown): idle, it stops as before; in a task, the task stops at its next
    checkpoint (tasks.progress.JobProgress.heartbeat raises GiveBack) instead of dying
    mid-write and being reported as a lost process."""
    if not TASK_RUNNING.is_set():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    STOP.set()


def install_stop_handler() -> None:
    """In a forked pool process (tasks.signals): a SIGTERM asks the running task to stop."""
    signal.signal(signal.SIGTERM, _on_sigterm)


def checkpoint() -> None:
    """Raise GiveBack if this process was asked to stop (in the thread that runs the task;
    a keep-alive thread's heartbeat never raises)."""
    if STOP.is_set() and threading.current_thread() is threading.main_thread():
        raise GiveBack


def worker_stopping() -> bool:
    """Whether this worker's warm or cold shutdown has begun (set in its main process)."""
    return state.should_stop is not None or state.should_terminate is not None


def give_back(kwargs: Mapping[str, object]) -> bool:
    """Mark the job of a task given back to the broker as waiting again; returns whether one was."""
    from tasks.models import Job

    job_id = kwargs.get("job_id")
    if not isinstance(job_id, int):
        return False
    try:
        return bool(
            Job.objects.filter(pk=job_id, state__in=(Job.State.PENDING, Job.State.RUNNING)).update(
                state=Job.State.PENDING, heartbeat_at=None, worker="", message=GIVEN_BACK
            )
        )
    except DatabaseError:
        logger.exception("job %s: could not mark it given back (the broker has its message)", job_id)
        return False


class GivenBackRequest(Request):
    """Celery's request of a task, but a task lost while its worker stops goes back to the broker."""

    def on_failure(self, exc_info: ExceptionInfo, send_failed_event: bool = True, return_ok: bool = False) -> None:
        exc: object = exc_info.exception
        exc = getattr(exc, "exc", exc)  # billiard's ExceptionWithTraceback wraps it
        if isinstance(exc, WorkerLostError) and worker_stopping():
            state.task_ready(self)  # no longer active: the warm shutdown does not wait for it
            given_back = give_back(self.kwargs)
            if self.task.acks_late:
                self.reject(requeue=True)
            logger.warning(
                "%s[%s] was cut short by the worker's stop: its message is back in the broker%s",
                self.name,
                self.id,
                " and its job waits for the next start" if given_back else "",
            )
            return
        super().on_failure(exc_info, send_failed_event=send_failed_event, return_ok=return_ok)
