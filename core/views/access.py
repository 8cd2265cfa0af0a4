"""Who may see and do what on the dashboard: every page needs an analyst (or curator);
curator-only actions answer 403 to analysts, and anonymous visitors go to the login page."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from core.roles import is_analyst, is_curator

View = Callable[..., HttpResponse]


def analyst_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_analyst(request.user):
            raise PermissionDenied("This page is for analysts and curators.")
        return view(request, *args, **kwargs)

    return wrapped


def curator_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_curator(request.user):
            raise PermissionDenied("Only curators may do this.")
        return view(request, *args, **kwargs)

    return wrapped
