from django.contrib import admin
from django.utils.html import format_html

from tasks.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin[Job]):
    list_display = ("id", "kind", "state", "progress", "message", "created_by", "created_at", "finished_at")
    list_filter = ("kind", "state", "created_at")
    search_fields = ("message", "error", "celery_task_id")
    readonly_fields = [f.name for f in Job._meta.fields]
    list_select_related = ("created_by",)

    @admin.display(description="Progress")
    def progress(self, job: Job) -> str:
        return format_html('<a href="/jobs/{}/">{}%</a>', job.pk, job.percent)

    def has_add_permission(self, request: object) -> bool:
        return False
