"""A NUL character in a dashboard page's query string or form: a 400 page naming the field.

PostgreSQL text cannot hold NUL, so a filter such as ``?q=a%00b`` once reached the database
and failed there (a 500) on the claims, documents, history, subject and conflict pages and
the ask form. The API refuses it field by field already (core.api.views.base.query_param and
core.api.fields.no_nul, in the API's JSON error shape), so /api/ is left to it; every other
page is answered here, before any view runs, and nothing is stored."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, QueryDict
from django.template import loader

FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
ERROR_FRAGMENT_HEADER = "X-Error-Fragment"  # a 400 whose body is a fragment for an htmx target
# htmx forms (by the id htmx sends as HX-Trigger) -> where their refusal's message goes: the
# same places as their own validation errors (core.views.ask), never over a conversation.
ERROR_SLOTS = {"ask-form": "#result", "follow-up-form": "#follow-up-errors"}


def field_with_nul(data: QueryDict) -> str | None:
    """The first parameter whose name or any value holds a NUL, else None."""
    for name, values in data.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return name.replace("\x00", "\\0")[:100]
    return None


class NulCharacterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            field = field_with_nul(request.GET)
            # The form's fields (a multipart upload's files are not read here); parsing it now
            # is what CsrfViewMiddleware does for every POST anyway.
            if field is None and request.method == "POST" and request.content_type in FORMS:
                field = field_with_nul(request.POST)
            if field is not None:
                message = f"{field} must not contain NUL characters (the byte %00)."
                slot = (
                    ERROR_SLOTS.get(request.headers.get("HX-Trigger", ""))
                    if request.headers.get("HX-Request") == "true"
                    else None
                )
                if slot is not None:
                    # The ask forms get the message where their own errors go, instead of a whole
                    # page that htmx would not show at all: static/js/app.js swaps a 400 that
                    # carries ERROR_FRAGMENT_HEADER (other htmx forms keep the plain 400).
                    body = loader.render_to_string("_request_error.html", {"message": message}, request)
                    response = HttpResponse(body, status=400)
                    response[ERROR_FRAGMENT_HEADER] = "1"
                    response["HX-Retarget"] = slot
                    response["HX-Reswap"] = "innerHTML"
                    return response
                body = loader.render_to_string("400.html", {"message": message}, request)
                return HttpResponse(body, status=400)
        return self.get_response(request)
