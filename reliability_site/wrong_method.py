"""A page address used with a method it does not take (a form's address opened in the
browser, a bookmark of a POST-only action): the product's own 405 page saying what the address
is for, instead of Django's empty response. The API keeps its JSON error (core.api.exceptions);
admin and static paths are left alone."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template import loader

LEFT_ALONE = ("/api/", "/admin/", "/static/")


class WrongMethodPageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.path.startswith(LEFT_ALONE):
            return response
        allowed = response.get("Allow", "")
        page = HttpResponse(
            loader.render_to_string(
                "405.html", {"method": request.method, "allowed": allowed, "path": request.path}, request
            ),
            status=405,
        )
        if allowed:
            page["Allow"] = allowed
        return page
