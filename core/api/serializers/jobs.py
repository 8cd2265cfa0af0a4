"""Background jobs and their progress."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tasks.models import Job


class ProgressSerializer(serializers.Serializer):
    current = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()

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
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, job: Job) -> dict[str, int]:
        return {"current": job.progress_current, "total": job.progress_total, "percent": job.percent}
