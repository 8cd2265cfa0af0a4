"""Per-user throttles whose rates are read at request time (so settings can change them).

Scopes in REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]: "user" for every request, "ask" for
asking a question (each ask runs the generator over many sources). The dashboard's ask
form counts against the same "ask" budget (ask_throttle_wait), so a user cannot ask past it
by switching from the API to the page or back.
"""

from __future__ import annotations

import math
from typing import cast

from django.http import HttpRequest
from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle


class UserThrottle(UserRateThrottle):
    scope = "user"

    def get_rate(self) -> str | None:
        # The stubs type the rates as numbers; DRF's are "N/period" strings.
        return cast("dict[str | None, str | None]", api_settings.DEFAULT_THROTTLE_RATES).get(self.scope)


class AskThrottle(UserThrottle):
    scope = "ask"


PERIODS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def ask_rate() -> str:
    """The "ask" budget in words ("30 per minute"); "" when asking is not throttled."""
    rate = AskThrottle().rate
    if not rate:
        return ""
    number, period = rate.split("/")
    return f"{number} per {PERIODS.get(period[:1], period)}"


def ask_throttle_wait(request: HttpRequest) -> int | None:
    """Count one ask by the request's user against the "ask" budget POST /api/questions/
    uses (the same cache key: one count per user, wherever they ask from). None when the ask
    may go on; otherwise the whole seconds to wait, and nothing is counted."""
    throttle = AskThrottle()
    # A page's request, no view: the throttle reads only its user and address, which HttpRequest has.
    if throttle.allow_request(request, None):  # type: ignore[arg-type]
        return None
    return max(1, math.ceil(throttle.wait() or 1))
