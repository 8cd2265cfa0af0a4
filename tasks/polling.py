"""htmx polling: a partial that the page re-fetches until the work behind it ends."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# htmx stops an `every Ns` poll when the server answers 286.
STOP_POLLING = 286


def render_poll(request: HttpRequest, template: str, context: dict[str, object], *, finished: bool) -> HttpResponse:
    response = render(request, template, context)
    if finished:
        response.status_code = STOP_POLLING
    return response
