"""The database out of reach (restarting, a network blip): 503 Service Unavailable with a
Retry-After, not a 500 (issue 38 row 13). Pages get a short page that needs no database (the
usual base template reads the session and the user); the API keeps its one error shape."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

from core.error_shape import error_body

logger = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 30
MESSAGE = f"The database is out of reach for a moment (restarting, or a network blip): try again in {RETRY_AFTER_SECONDS} seconds."
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Unavailable for a moment</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main id="error-503"><h1>Unavailable for a moment</h1><p>{message}</p><p><a href="">Try again</a></p></main>
</body></html>"""


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exception)
        if request.path_info.startswith("/api/"):
            response = HttpResponse(
                json.dumps(error_body("database_unavailable", MESSAGE)), status=503, content_type="application/json"
            )
        else:
            response = HttpResponse(PAGE.format(message=MESSAGE), status=503, content_type="text/html; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
