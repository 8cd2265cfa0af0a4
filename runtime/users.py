"""Who does something: the types services take for "the user" of a page, an API call or a job.

A page or an API request hands its ``request.user``: the signed-in ``User`` or an
``AnonymousUser`` (``Actor``); the CLI and workers hand ``None``. A page that only asks
whether someone is signed in and who they are takes any ``Viewer``. The names are imported
for type checking only, so importing this module needs no app registry (runtime imports no
app); ``recorded`` imports the User class when it is called."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser, User

# String aliases: at run time they are only text, mypy reads them as the unions.
Actor: TypeAlias = "User | AnonymousUser"
Viewer: TypeAlias = "AbstractBaseUser | AnonymousUser"


def recorded(user: Actor | None) -> User | None:
    """The user to store as who started something: the signed-in user, or None (the CLI, a
    worker). An anonymous visitor cannot own a record: ValueError, as the foreign key's own
    assignment says."""
    from django.contrib.auth.models import User

    if user is None or isinstance(user, User):
        return user
    raise ValueError(f"Cannot record {user!r} as a user: must be a User instance.")


def signed_in(user: Viewer | None) -> User | None:
    """The signed-in user, or None for an anonymous visitor or no user at all (what
    ``user.is_authenticated`` tells, with the type narrowed)."""
    from django.contrib.auth.models import User

    return user if isinstance(user, User) else None
