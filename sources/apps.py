from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources and documents"

    def ready(self) -> None:
        from sources import signals  # noqa: F401  (keeps Source.chunk_count right on deletes)
