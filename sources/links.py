"""Document and source URLs are untrusted input: only absolute http(s) URLs are stored or linked.

A `javascript:` or `data:` URL in an uploaded record would otherwise become a clickable
`<a href>` on the dashboard and in the admin (stored XSS). Ingestion refuses such records
(`is_http_url`), and every page that links a stored URL goes through `http_url`, which turns
anything else (rows stored before this check existed included) into no link at all.
"""

from __future__ import annotations

from typing import TypeGuard

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

URL_SCHEMES = ("http", "https")
MAX_URL_CHARS = 2000  # Document.url's max_length
HTTP_URL_MESSAGE = "only http and https URLs are accepted"

http_url_validator = URLValidator(schemes=list(URL_SCHEMES), message=HTTP_URL_MESSAGE)


def is_http_url(value: object) -> TypeGuard[str]:
    """An absolute http(s) URL of at most MAX_URL_CHARS characters."""
    if not isinstance(value, str) or not value or len(value) > MAX_URL_CHARS or value != value.strip():
        return False
    try:
        http_url_validator(value)
    except ValidationError:
        return False
    return True


def http_url(value: object) -> str:
    """The URL when it is safe to put in an href, else "" (so the caller shows no link)."""
    return value if is_http_url(value) else ""
