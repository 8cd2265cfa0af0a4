"""`{% load safe_links %}{{ url|http_url }}`: a stored URL for an href, or "" when it is not an
absolute http(s) URL (a `javascript:` URL stored before ingestion checked URLs is never linked)."""

from __future__ import annotations

from typing import Any

from django import template

from sources.links import http_url as _http_url

register = template.Library()


@register.filter
def http_url(value: Any) -> str:
    return _http_url(value)
