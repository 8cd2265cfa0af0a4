"""Parse DATABASE_URL into Django's DATABASES entry (postgres only: we need pgvector)."""

from __future__ import annotations

from typing import TypedDict
from urllib.parse import parse_qs, unquote, urlparse

from reliability_site.env import ConfigError


class DatabaseSettings(TypedDict, total=False):
    """One entry of Django's DATABASES, as this project fills it."""

    ENGINE: str
    NAME: str
    USER: str
    PASSWORD: str
    HOST: str
    PORT: str
    OPTIONS: dict[str, str]
    CONN_MAX_AGE: int


def parse_database_url(url: str) -> DatabaseSettings:
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ConfigError(
            f"DATABASE_URL must be a postgresql:// URL (pgvector is required), got scheme {parsed.scheme!r}"
        )
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = query.pop("host", None) or (unquote(parsed.hostname) if parsed.hostname else "")
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ConfigError("DATABASE_URL must name a database (postgresql://host/NAME)")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": query,
    }
