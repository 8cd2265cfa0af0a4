"""API tests: throttle counters and uploads isolated per test (the error shape every failure
has is read by tests/helpers.py's error_of). The accounts and their token clients (as_analyst, as_curator, as_nobody,
anonymous) come from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def fresh_throttles(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """Throttle counters live in the cache, a table of the (per-session) test database:
    each test starts with none, whether or not it uses the database itself."""
    with django_db_blocker.unblock():
        cache.clear()
    yield
    with django_db_blocker.unblock():
        cache.clear()


@pytest.fixture(autouse=True)
def uploads_in_tmp(settings: Any, tmp_path: Any) -> None:
    settings.UPLOAD_DIR = tmp_path / "uploads"
