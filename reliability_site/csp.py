"""A Content-Security-Policy header on every response (settings.CONTENT_SECURITY_POLICY).

The policy allows scripts and styles from this server only: no inline <script>, no on*=
handlers, no style= attributes, nothing from another origin. A stored link or text that
slips past the templates' escaping still cannot run script.

A view that needs more (the API docs: Swagger UI and Redoc put inline <style> in their
pages, Redoc starts a web worker from a blob: URL) is wrapped with `csp_update(...)`, which
adds sources to single directives for that view's responses only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import update_wrapper
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponseBase)

HEADER = "Content-Security-Policy"


def build_policy(policy: Mapping[str, Iterable[str]], extra: Mapping[str, Iterable[str]] | None = None) -> str:
    merged = {directive: list(sources) for directive, sources in policy.items()}
    for directive, sources in (extra or {}).items():
        values = merged.setdefault(directive, list(merged.get("default-src", [])))
        values.extend(source for source in sources if source not in values)
    return "; ".join(" ".join([directive, *sources]) for directive, sources in merged.items())


class ContentSecurityPolicyMiddleware:
    """Outermost middleware: static files, errors and redirects get the header too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = build_policy(settings.CONTENT_SECURITY_POLICY, getattr(response, "csp_update", None))
        return response


def csp_update(**directives: Iterable[str]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Add sources to directives for one view: csp_update(style_src=["'unsafe-inline'"])."""
    extra = {name.replace("_", "-"): list(sources) for name, sources in directives.items()}

    def decorator(view: Callable[P, R]) -> Callable[P, R]:
        def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
            response = view(*args, **kwargs)
            setattr(response, "csp_update", extra)  # noqa: B010 - read back by the middleware, which getattr()s it
            return response

        update_wrapper(wrapped, view)
        return wrapped

    return decorator
