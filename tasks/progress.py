"""One small helper through which every task reports progress into its Job record.

Writes are single UPDATE statements outside any caller transaction's rows, so pages that
poll the job see progress as it happens.

A job that has ended stays ended: progress, heartbeats and the final succeed/fail only
apply to a job that is still pending or running. Work that ends after its job was marked
failed (the stale-job reaper, a worker restart) leaves the job failed with its first error
and appends a log line saying what happened instead (see docs/operations.md).

The final write (succeed, fail) is retried with a bounded backoff while the database is
unreachable, so a job whose database went away mid-work is recorded once it is back.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import traceback
from collections.abc import Callable, Mapping
from typing import TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from core.engine.types import JSONObject, JSONValue
from tasks.models import Job
from tasks.shutdown import checkpoint

logger = logging.getLogger(__name__)
MAX_LOG_LINES = 500
# Seconds to wait before each new try of a job's final write while the database is down
# (about 4 minutes in all); past that the job stays running and the stale-job reaper ends it.
FINAL_WRITE_BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0)
UNFINISHED = (Job.State.PENDING, Job.State.RUNNING)
T = TypeVar("T")


def _retry_while_database_down(write: Callable[[], T], what: str) -> T | None:
    """Run `write`; while it fails because the database is unreachable, reconnect and try
    again after each FINAL_WRITE_BACKOFF delay. The last failure is raised."""
    for delay in (*FINAL_WRITE_BACKOFF, None):
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if delay is None or connection.in_atomic_block:
                raise
            logger.warning("%s: the database is unreachable (%s); trying again in %s s", what, exc, delay)
            try:
                connection.close()  # the next query opens a fresh connection
            except Exception:
                logger.debug("closing the broken database connection failed", exc_info=True)
            time.sleep(delay)
    return None  # not reached


def shown_error(error: BaseException, job_id: int) -> str:
    """What the job page shows analysts for ``error``. A database error's own text is
    PostgreSQL's (index row sizes, constraint names, SQL), of no use to an analyst and not
    theirs to read: it is replaced by a plain sentence, and the technical detail goes to the
    server log only (fail() logs the whole traceback, for staff). A ValueError is the work's
    own message about its input and is shown as it is."""
    if isinstance(error, DatabaseError):
        return (
            "The database refused part of the work, so the job stopped. "
            f"This is a fault on the server, not in what you gave: staff find the details in the server log (job {job_id})."
        )
    return str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"


class JobProgress:
    def __init__(self, job_id: int) -> None:
        self.job_id = job_id

    def _update(self, **fields: object) -> int:
        """Write to the job while it has not ended; returns 1 if it was written, else 0."""
        fields.setdefault("heartbeat_at", timezone.now())
        return Job.objects.filter(pk=self.job_id, state__in=UNFINISHED).update(**fields)

    def heartbeat(self, message: str | None = None) -> bool:
        """Say the work is alive (between batches of long work), so the stale-job reaper
        leaves the job alone. False when the job has ended meanwhile (reaped, say): the
        caller should stop, since nothing it does will be recorded as this job's. Raises
        tasks.shutdown.GiveBack when the worker is stopping (the job goes back to the broker)."""
        checkpoint()  # a stop of the worker: give the task back here, between two batches
        fields: dict[str, object] = {}
        if message is not None:
            fields["message"] = message[:500]
        return bool(self._update(**fields))

    def start(self, *, total: int | None = None, message: str = "", celery_task_id: str = "", worker: str = "") -> None:
        fields: dict[str, object] = {
            "state": Job.State.RUNNING,
            "started_at": timezone.now(),
            "message": message[:500],
            "worker": worker or socket.gethostname(),
            "error": "",
        }
        if total is not None:
            fields["progress_total"] = total
        if celery_task_id:
            fields["celery_task_id"] = celery_task_id
        self._update(**fields)

    def set_total(self, total: int, message: str | None = None) -> None:
        fields: dict[str, object] = {"progress_total": total}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def advance(self, step: int = 1, message: str | None = None) -> None:
        fields: dict[str, object] = {"progress_current": F("progress_current") + step}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def set_progress(self, current: int, message: str | None = None) -> None:
        fields: dict[str, object] = {"progress_current": current}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def advance_to(self, current: int, message: str | None = None) -> None:
        """Raise progress_current to `current` (GREATEST in SQL: never lowered), so workers
        sharing one job may report absolute counts in any order."""
        fields: dict[str, object] = {"progress_current": Greatest(F("progress_current"), Value(current))}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def log(self, line: str) -> None:
        """Append a timestamped line (jsonb append in SQL: no read-modify-write race)."""
        entry = f"{timezone.now():%H:%M:%S} {line}"[:1000]
        logger.info("job %s: %s", self.job_id, line)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE tasks_job SET log = (CASE WHEN jsonb_array_length(log) >= %s "
                "THEN log - 0 ELSE log END) || jsonb_build_array(%s::text), heartbeat_at = now() WHERE id = %s",
                [MAX_LOG_LINES, entry, self.job_id],
            )

    def report_parts(self, parts: Mapping[str, Mapping[str, JSONValue]]) -> None:
        """Set the state of some parts of the work (Job.parts), each replacing its earlier
        entry: one jsonb merge in SQL (no read-modify-write race), only while the job runs."""
        if not parts:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE tasks_job SET parts = parts || %s::jsonb, heartbeat_at = now() WHERE id = %s AND state = ANY(%s)",
                [json.dumps({str(k): dict(v) for k, v in parts.items()}), self.job_id, [s.value for s in UNFINISHED]],
            )

    def succeed(self, result: JSONObject | None = None, message: str = "Done") -> bool:
        """The job succeeded (and any earlier error is cleared). Only a running job can
        succeed: one already marked failed stays failed, and its log says the work ended
        later. Returns whether the job was marked succeeded."""

        def write() -> int:
            job = Job.objects.only("progress_total").get(pk=self.job_id)
            return Job.objects.filter(pk=self.job_id, state=Job.State.RUNNING).update(
                state=Job.State.SUCCEEDED,
                result=result or {},
                message=message[:500],
                error="",
                progress_current=job.progress_total,
                finished_at=timezone.now(),
                heartbeat_at=timezone.now(),
            )

        if _retry_while_database_down(write, f"job {self.job_id}: recording success"):
            return True
        self._late(f"the work finished ({message}) after the job had ended; the job keeps its state", result)
        return False

    def fail(self, error: BaseException | str, *, result: JSONObject | None = None) -> bool:
        """The job failed with `error`. A job that has already ended keeps its state and
        first error; the new error is added to its log. Returns whether the job was marked failed."""
        if isinstance(error, BaseException):
            text = shown_error(error, self.job_id)
            logger.error("job %s failed:\n%s", self.job_id, "".join(traceback.format_exception(error)))
        else:
            text = error
        fields: dict[str, object] = {
            "state": Job.State.FAILED,
            "error": text,
            "message": ("Failed: " + text.splitlines()[0] if text else "Failed")[:500],
            "finished_at": timezone.now(),
        }
        if result is not None:
            fields["result"] = result
        if _retry_while_database_down(lambda: self._update(**fields), f"job {self.job_id}: recording the failure"):
            return True
        self._late(f"the work failed after the job had ended: {text.splitlines()[0] if text else ''}", result)
        return False

    def _late(self, line: str, result: JSONObject | None) -> None:
        """Work that ended after its job had: say so in the job's log, change nothing else."""
        logger.warning("job %s: %s", self.job_id, line)
        if result:
            line += f" (result: {str(result)[:300]})"
        _retry_while_database_down(lambda: self.log(line), f"job {self.job_id}: logging")
