"""The request of pages that read ``request.htmx`` (set by django_htmx's HtmxMiddleware)."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """For the type checker only: views are called with Django's HttpRequest, on which the
    middleware has set ``htmx``."""

    htmx: HtmxDetails
