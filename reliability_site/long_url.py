"""An over-long address: 414 URI Too Long in the product's own form (issue 38 row 13), the
API's JSON error on /api/ paths and the site's error page elsewhere, instead of the web
server's bare HTML.

gunicorn refuses a request line past its --limit-request-line itself, before Django sees it;
scripts/run.sh raises that limit to its maximum (8190 bytes) so that an address longer than
MAX_URL_CHARS but within the server's line reaches Django, and is answered here before any
view runs. No address the product writes comes near the limit (the ask forms post; the
filters' query strings are short)."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template import loader

from core.error_shape import error_body

MAX_URL_CHARS = 4096  # the address as sent: path and query string, percent-encoded
SERVER_LINE_LIMIT = 8190  # gunicorn's --limit-request-line in scripts/run.sh (its maximum)


def url_length(request: HttpRequest) -> int:
    """The address's length as the client sent it (gunicorn's RAW_URI), else as Django
    rebuilds it (the path percent-encoded, then the query string)."""
    raw = request.META.get("RAW_URI")
    return len(raw) if isinstance(raw, str) and raw else len(request.get_full_path())


class LongUrlMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = url_length(request)
        if length <= MAX_URL_CHARS:
            return self.get_response(request)
        message = (
            f"The address is too long ({length} characters; at most {MAX_URL_CHARS}). "
            "Shorten its query string, or send long input in a POST body."
        )
        if request.path_info.startswith("/api/"):
            body = json.dumps(error_body("uri_too_long", message))
            return HttpResponse(body, status=414, content_type="application/json")
        page = loader.render_to_string("414.html", {"message": message}, request)
        return HttpResponse(page, status=414)
