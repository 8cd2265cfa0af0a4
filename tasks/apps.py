from django.apps import AppConfig

from runtime.jobs import set_dispatcher


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Jobs"

    def ready(self) -> None:
        # Imported here, not at module level: both need the app registry (tasks.models).
        from tasks import signals  # noqa: F401  (connects the Celery signal handlers)
        from tasks.jobs import start_job

        set_dispatcher(start_job)  # services start jobs through runtime.jobs.dispatch_job
