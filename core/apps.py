from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Questions and reliability"

    def ready(self) -> None:
        from core import checks  # noqa: F401  (registers the settings checks)
        from core.services import job_titles  # noqa: F401  (how questions' and runs' jobs read)

        # CrEst's extra ensemble embedders (CREST_EXTRA_EMBEDDERS): lazy factories, nothing
        # loads here; an unknown or uninstalled one stops the start with the fix.
        from core.services.crest_embedders import register_extra_embedders

        register_extra_embedders()
