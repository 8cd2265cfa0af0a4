"""Who is locked out after failed logins (settings.AXES_HANDLER), and what a locked-out login
gets (settings.AXES_LOCKOUT_CALLABLE, called by AxesMiddleware).

django-axes counts failed logins for AXES_COOLOFF_TIME. A username is locked from one client
address after AXES_FAILURE_LIMIT failures there (the pair), so one person mistyping behind a
shared address (an office NAT, a proxy) locks only themselves; the address as a whole is
locked only after AXES_ADDRESS_FAILURE_FACTOR times as many failures across every username
(someone guessing many accounts from it). An API client (POST /api/token/) gets the API's
error shape with 429 and Retry-After; a form login (/login/, /admin/login/) a page saying so.
"""

from __future__ import annotations

import math
from typing import Any, cast

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from core.error_shape import error_body

LOCKED_OUT_CODE = "locked_out"


def cooloff_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def address_failure_limit(request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
    """Failures from one address, across every username, that lock the address itself."""
    # django-axes is untyped: its failure limit is an int.
    return cast(int, get_failure_limit(request, credentials)) * int(settings.AXES_ADDRESS_FAILURE_FACTOR)


class PairThenAddressHandler(AxesDatabaseHandler):  # type: ignore[misc]  # django-axes ships no types
    """django-axes' database handler, counting by the username-and-address pair first and by
    the address alone only at address_failure_limit (AXES_LOCKOUT_PARAMETERS lists both, so
    axes records and resets attempts by them)."""

    def _failures(self, request: HttpRequest, **match: Any) -> int:
        attempts = AccessAttempt.objects.filter(**match)
        if settings.AXES_COOLOFF_TIME is not None:
            attempts = attempts.filter(attempt_time__gte=get_cool_off_threshold(request))
        return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """The pair's failures; AXES_FAILURE_LIMIT (locked) once the address alone reached its
        own, higher limit. django-axes locks when this reaches AXES_FAILURE_LIMIT."""
        address = request.axes_ip_address  # type: ignore[attr-defined]  # set by axes' middleware
        username = get_client_username(request, credentials)
        pair = self._failures(request, username=username, ip_address=address)
        if self._failures(request, ip_address=address) >= address_failure_limit(request, credentials):
            return max(pair, cast(int, get_failure_limit(request, credentials)))
        return pair


def lockout_message() -> str:
    minutes = max(1, math.ceil(cooloff_seconds() / 60))
    return (
        "Too many failed logins for this account from this address, or from this address: "
        f"logging in is blocked for {minutes} minute{'s' if minutes != 1 else ''}."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        response: HttpResponse = JsonResponse(error_body(LOCKED_OUT_CODE, lockout_message()), status=429)
    else:
        context = {"message": lockout_message(), "minutes": max(1, math.ceil(cooloff_seconds() / 60))}
        response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(cooloff_seconds())
    return response
