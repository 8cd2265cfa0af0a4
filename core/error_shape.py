"""The one error shape of the API: {"error": {"code", "message", "fields"}}.

Plain data, no framework: the API's exception handler (core.api.exceptions), the error pages
that answer API paths (core.views.errors) and the login lockout (core.lockout) all build it
here, so nothing below the API imports the API to speak its language.
"""

from __future__ import annotations

from typing import Any


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}
