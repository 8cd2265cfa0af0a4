"""Per-user throttles whose rates are read at request time (so settings can change them).

Scopes in REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]: "user" for every request, "ask" for
asking a question (each ask runs the generator over many sources).
"""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle


class UserThrottle(UserRateThrottle):
    scope = "user"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AskThrottle(UserThrottle):
    scope = "ask"
