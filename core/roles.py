"""Two roles: analysts ask and read everything; curators also change sources, documents
and start runs. Roles are Django groups (created by a migration); superusers are curators.

The pages' access decorators live here too: every page needs an analyst (or curator);
curator-only actions answer 403 to analysts, and anonymous visitors go to the login page."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

ANALYST = "analyst"
CURATOR = "curator"


def _groups(user: Any) -> set[str]:
    cache = getattr(user, "_role_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True)) if user.is_authenticated else set()
        user._role_groups = cache
    return cache


def is_curator(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.is_active and (user.is_superuser or CURATOR in _groups(user)))


def is_analyst(user: Any) -> bool:
    """Analysts and curators (a curator can do all an analyst can)."""
    return bool(user and user.is_authenticated and user.is_active and (is_curator(user) or ANALYST in _groups(user)))


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
