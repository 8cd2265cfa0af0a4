"""One error shape for the whole API: {"error": {"code", "message", "fields"}} (core.error_shape).

Clients branch on `code`, show `message`, and point at the input at fault with `fields`
(dotted paths for nested input, e.g. "documents.3.published").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

if TYPE_CHECKING:
    from rest_framework.exceptions import _APIExceptionInput  # a stub-only alias

from core.error_shape import error_body


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than the server accepts."
    default_code = "payload_too_large"


class TooManyRunsInProgress(exceptions.APIException):
    """429: the user already has ESTIMATION_MAX_CONCURRENT_PER_USER estimation runs in progress."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "Too many estimation runs in progress."
    default_code = "too_many_runs"


class JsonTooDeepError(exceptions.ParseError):
    default_detail = "The JSON body is nested too deeply."
    default_code = "json_too_deep"


def json_too_deep(error: Exception | None) -> JsonTooDeepError:
    """400 naming the nesting limit (JSON_MAX_DEPTH) and, when known, the line past it."""
    limit = int(getattr(settings, "JSON_MAX_DEPTH", 64))
    line = getattr(error, "line", None)
    where = f", at line {line}" if line is not None else ""
    return JsonTooDeepError(
        f"The JSON body nests arrays or objects deeper than the limit of {limit} levels (JSON_MAX_DEPTH){where}."
    )


class TooManyParts(exceptions.ParseError):
    """A multipart or form body with more files or fields than Django accepts."""

    default_detail = "The request has too many files or fields."
    default_code = "too_many_files"

    @classmethod
    def from_django(cls, exc: Exception) -> TooManyParts:
        if isinstance(exc, TooManyFilesSent):
            limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
            return cls(f"An upload holds at most {limit} files (DATA_UPLOAD_MAX_NUMBER_FILES).", "too_many_files")
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return cls(f"A request holds at most {limit} fields (DATA_UPLOAD_MAX_NUMBER_FIELDS).", "too_many_fields")


def flatten_fields(detail: object, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"a.b.0.c": [messages]}."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            out.update(flatten_fields(value, name))
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            out[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                if item:  # DRF keeps an empty entry for each valid list item
                    out.update(flatten_fields(item, f"{prefix}.{index}" if prefix else str(index)))
    else:
        out[prefix or "non_field_errors"] = [str(detail)]
    return out


def _first_code(exc: exceptions.APIException, fallback: str) -> str:
    codes: object = exc.get_codes()
    while isinstance(codes, (dict, list)) and codes:
        codes = next(iter(codes.values())) if isinstance(codes, dict) else codes[0]
    return codes if isinstance(codes, str) else fallback


def _validation_message(fields: dict[str, list[str]]) -> str:
    general = fields.get("non_field_errors")
    if general:
        return general[0]
    name, messages = next(iter(fields.items()))
    return f"{name}: {messages[0]}" if messages else "Invalid input."


def api_exception_handler(exc: Exception, context: Mapping[str, object]) -> Response | None:
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]; anything not handled here is a 500 (a bug)."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(str(exc) or None)
    elif isinstance(exc, (TooManyFilesSent, TooManyFieldsSent)):
        exc = TooManyParts.from_django(exc)
    elif isinstance(exc, DjangoValidationError):
        # Services raise Django's ValidationError naming the field at fault.
        detail: _APIExceptionInput = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        exc = exceptions.ValidationError(detail)

    if not isinstance(exc, exceptions.APIException):
        return None

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]  # present: the getattr above
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]  # present: the getattr above

    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_fields(exc.detail)
        general = fields.pop("non_field_errors", None)
        message = general[0] if general else _validation_message(fields)
        body = error_body(_first_code(exc, "invalid"), message, fields)
    else:
        detail = exc.detail
        message = (
            str(detail)
            if not isinstance(detail, (dict, list))
            else "; ".join(f"{k}: {v[0] if isinstance(v, list) else v}" for k, v in flatten_fields(detail).items())
        )
        body = error_body(_first_code(exc, str(exc.default_code)), message)
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)
