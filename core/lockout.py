"""What a locked-out login gets (settings.AXES_LOCKOUT_CALLABLE, called by AxesMiddleware).

django-axes locks an account, and separately a client address, after AXES_FAILURE_LIMIT
failed logins for AXES_COOLOFF_TIME. An API client (POST /api/token/) gets the API's error
shape with 429 and Retry-After; a form login (/login/, /admin/login/) a page saying so.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

LOCKED_OUT_CODE = "locked_out"


def cooloff_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def lockout_message() -> str:
    minutes = max(1, math.ceil(cooloff_seconds() / 60))
    return (
        "Too many failed logins for this account or from this address: "
        f"logging in is blocked for {minutes} minute{'s' if minutes != 1 else ''}."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        # Imported here: django-axes' system check imports this module early, and the API's
        # exceptions module must load after DRF's views (its parsers import it back).
        from core.api.exceptions import error_body

        response: HttpResponse = JsonResponse(error_body(LOCKED_OUT_CODE, lockout_message()), status=429)
    else:
        context = {"message": lockout_message(), "minutes": max(1, math.ceil(cooloff_seconds() / 60))}
        response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(cooloff_seconds())
    return response
