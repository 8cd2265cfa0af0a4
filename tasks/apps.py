from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from tasks import signals  # noqa: F401  (connects the Celery signal handlers)
