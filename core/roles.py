"""Two roles: analysts ask and read everything; curators also change sources, documents
and start runs. Roles are Django groups (created by a migration); superusers are curators.

The pages' access decorators live here too: every page needs an analyst (or curator);
curator-only actions answer 403 to analysts, and anonymous visitors go to the login page."""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeAlias, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from runtime.users import Viewer, signed_in

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ANALYST = "analyst"
CURATOR = "curator"


def _groups(user: User) -> set[str]:
    cache: set[str] | None = getattr(user, "_role_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        setattr(user, "_role_groups", cache)  # noqa: B010 - a per-request cache the User class does not declare
    return cache


def is_curator(user: Viewer | None) -> bool:
    account = signed_in(user)
    return bool(account is not None and account.is_active and (account.is_superuser or CURATOR in _groups(account)))


def is_analyst(user: Viewer | None) -> bool:
    """Analysts and curators (a curator can do all an analyst can)."""
    account = signed_in(user)
    return bool(account is not None and account.is_active and (is_curator(account) or ANALYST in _groups(account)))


P = ParamSpec("P")
R = TypeVar("R", bound=HttpRequest)
# A page: the request (an HttpRequest or a subclass), then whatever the URL captured.
View: TypeAlias = Callable[Concatenate[R, P], HttpResponse]


def analyst_required(view: View[R, P]) -> View[R, P]:
    def wrapped(request: R, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        if not is_analyst(request.user):
            raise PermissionDenied("This page is for analysts and curators.")
        return view(request, *args, **kwargs)

    update_wrapper(wrapped, view)
    return login_required(wrapped)


def curator_required(view: View[R, P]) -> View[R, P]:
    def wrapped(request: R, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        if not is_curator(request.user):
            raise PermissionDenied("Only curators may do this.")
        return view(request, *args, **kwargs)

    update_wrapper(wrapped, view)
    return login_required(wrapped)
