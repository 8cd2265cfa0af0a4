"""Background jobs and their progress."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tasks.models import Job
from tasks.public import public_job


class ProgressSerializer(serializers.Serializer[object]):
    current = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer[Job]):
    progress = serializers.SerializerMethodField()
    parts = serializers.JSONField(
        read_only=True,
        help_text="Where each part of the work stands, by key: {n, label, state, detail}. A question's job has "
        'one part per source ("source-<id>"), state waiting, asking, answered, abstained, filtered or skipped.',
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "state",
            "progress",
            "message",
            "error",
            "result",
            "log",
            "parts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Job) -> dict[str, object]:
        # Users see the names of their files, never a server path (tasks.public).
        return dict(super().to_representation(public_job(instance)))

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, job: Job) -> dict[str, int]:
        return {"current": job.progress_current, "total": job.progress_total, "percent": job.percent}
