"""System checks of settings that only the engine can validate.

Settings stay free of engine imports (numpy and scipy would load on every manage.py call), so
a setting that names something the engine registers is checked here instead. Django runs
system checks before every management command (``migrate``, ``check``, ``runserver``...), so a
bad value stops scripts/run.sh before anything starts.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register


@register("settings")
def reliability_estimator_is_known(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """RELIABILITY_ESTIMATOR names a registered estimator (core.engine.reliability)."""
    from core.engine.reliability import available_estimators

    choices = available_estimators()
    value = settings.RELIABILITY_ESTIMATOR
    if value in choices:
        return []
    return [
        Error(
            f"RELIABILITY_ESTIMATOR must be one of {', '.join(choices)}, got {value!r}",
            hint="Set RELIABILITY_ESTIMATOR to a registered estimator, or unset it for the default.",
            id="core.E001",
        )
    ]
