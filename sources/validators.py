"""Validators for what curators type about a source."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

HOMEPAGE_MESSAGE = "Enter an http:// or https:// URL without spaces, quotes or angle brackets."
# Characters RFC 3986 never allows raw in a URI; a browser or schema reader would choke on them.
_FORBIDDEN = frozenset('"<>\\^`{|}')
_http_url = URLValidator(schemes=["http", "https"], message=HOMEPAGE_MESSAGE)


def validate_homepage(value: object) -> None:
    """A source's homepage: empty, or an absolute http(s) URL that is a valid URI as written
    (Django's URLValidator alone lets `https://ok.example/"><script>` through)."""
    if value in (None, ""):
        return
    text = str(value)
    # Not code "invalid": a URL field would swap its own "Enter a valid URL." in for ours.
    if any(char in _FORBIDDEN or char.isspace() or not char.isprintable() for char in text):
        raise ValidationError(HOMEPAGE_MESSAGE, code="invalid_homepage")
    try:
        _http_url(text)
    except ValidationError:
        raise ValidationError(HOMEPAGE_MESSAGE, code="invalid_homepage") from None
