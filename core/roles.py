"""Two roles: analysts ask and read everything; curators also change sources, documents
and start runs. Roles are Django groups (created by a migration); superusers are curators."""

from __future__ import annotations

from typing import Any

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
