from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources and documents"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from sources import (
            job_titles,  # noqa: F401  (how ingestion jobs read)
            signals,  # keeps Source.chunk_count right on deletes
        )

        post_migrate.connect(signals.request_missing_indexes, sender=self, dispatch_uid="sources.missing_indexes")
