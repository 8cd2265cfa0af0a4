"""Read for analysts, write for curators (core.roles); a user with no role gets 403."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from core.roles import is_analyst, is_curator


class RolePermission(BasePermission):
    """Safe methods need the analyst role; others the curator role.

    A view lists the actions analysts may also perform (asking a question) in
    `analyst_write_actions`.
    """

    message = "Your account has no role that allows this (ask an administrator for the analyst or curator role)."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False  # DRF answers 401 with a WWW-Authenticate challenge
        if request.method in SAFE_METHODS or getattr(view, "action", None) in getattr(
            view, "analyst_write_actions", ()
        ):
            if is_analyst(user):
                return True
            self.message = "Reading the API needs the analyst or curator role."
            return False
        if is_curator(user):
            return True
        self.message = "Changing data needs the curator role."
        return False
