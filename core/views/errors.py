"""The server-error page: the product's own page with the nav when a request context can be
built, the same page without one when it cannot (the error may be the database that the
session and the user come from), and plain text as a last resort. An error page must never fail."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader

from core.error_shape import error_body

logger = logging.getLogger(__name__)

PLAIN = "Server error: something went wrong on the server. Try again in a moment."
API_MESSAGE = "Server error: something went wrong on the server (the details are in its log). Try again in a moment."


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """handler500: templates/500.html with the request context, else without it, else text;
    under /api/ the API's JSON error shape (core.api.exceptions), which clients parse."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("server_error", API_MESSAGE), status=500)
    try:
        template = loader.get_template(template_name)
    except Exception:
        logger.exception("the %s template cannot be loaded", template_name)
        return HttpResponseServerError(PLAIN, content_type="text/plain")
    try:
        return HttpResponseServerError(template.render({}, request))
    except Exception:
        logger.warning("the server-error page is shown without its request context", exc_info=True)
    try:
        return HttpResponseServerError(template.render({}))
    except Exception:
        logger.exception("the %s template cannot be rendered", template_name)
        return HttpResponseServerError(PLAIN, content_type="text/plain")
