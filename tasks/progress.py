"""One small helper through which every task reports progress into its Job record.

Writes are single UPDATE statements outside any caller transaction's rows, so pages that
poll the job see progress as it happens.
"""

from __future__ import annotations

import logging
import socket
import traceback
from typing import Any

from django.db import connection
from django.db.models import F
from django.utils import timezone

from tasks.models import Job

logger = logging.getLogger(__name__)
MAX_LOG_LINES = 500


class JobProgress:
    def __init__(self, job_id: int) -> None:
        self.job_id = job_id

    def _update(self, **fields: Any) -> None:
        fields.setdefault("heartbeat_at", timezone.now())
        Job.objects.filter(pk=self.job_id).update(**fields)

    def start(self, *, total: int | None = None, message: str = "", celery_task_id: str = "", worker: str = "") -> None:
        fields: dict[str, Any] = {
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
        fields: dict[str, Any] = {"progress_total": total}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def advance(self, step: int = 1, message: str | None = None) -> None:
        fields: dict[str, Any] = {"progress_current": F("progress_current") + step}
        if message is not None:
            fields["message"] = message[:500]
        self._update(**fields)

    def set_progress(self, current: int, message: str | None = None) -> None:
        fields: dict[str, Any] = {"progress_current": current}
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

    def succeed(self, result: dict[str, Any] | None = None, message: str = "Done") -> None:
        job = Job.objects.only("progress_total").get(pk=self.job_id)
        self._update(
            state=Job.State.SUCCEEDED,
            result=result or {},
            message=message[:500],
            progress_current=job.progress_total,
            finished_at=timezone.now(),
        )

    def fail(self, error: BaseException | str, *, result: dict[str, Any] | None = None) -> None:
        if isinstance(error, BaseException):
            text = f"{type(error).__name__}: {error}" if not isinstance(error, ValueError) else str(error)
            logger.error("job %s failed:\n%s", self.job_id, "".join(traceback.format_exception(error)))
        else:
            text = error
        fields: dict[str, Any] = {
            "state": Job.State.FAILED,
            "error": text,
            "message": ("Failed: " + text.splitlines()[0] if text else "Failed")[:500],
            "finished_at": timezone.now(),
        }
        if result is not None:
            fields["result"] = result
        self._update(**fields)
