"""The persisted record of every long operation (ingestion, estimation runs, asks)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    class Kind(models.TextChoices):
        INGEST = "ingest", "Ingestion"
        REEMBED = "reembed", "Re-embedding"
        ESTIMATE = "estimate", "Estimation run"
        ASK = "ask", "Question"
        DEMO = "demo", "Demo corpus"
        OTHER = "other", "Other"

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    FINISHED_STATES = (State.SUCCEEDED, State.FAILED)

    kind = models.CharField(max_length=20, choices=Kind.choices, db_index=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING, db_index=True)
    progress_current = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=500, blank=True)
    log = models.JSONField(default=list, blank=True)
    # Where each part of the work stands, by key (an ask: one entry per source), each
    # {"n": order, "label": ..., "state": ..., "detail": ...}: pages list them while the job runs.
    parts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True, db_index=True)
    worker = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in self.FINISHED_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == self.State.SUCCEEDED

    @property
    def percent(self) -> int:
        if self.state == self.State.SUCCEEDED:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_current / self.progress_total))
