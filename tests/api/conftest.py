"""Accounts of each role with their tokens, and API clients that authenticate with them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.roles import ANALYST, CURATOR
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def fresh_throttles() -> Iterator[None]:
    """Throttle counters live in the cache; each test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def uploads_in_tmp(settings: Any, tmp_path: Any) -> None:
    settings.UPLOAD_DIR = tmp_path / "uploads"


def make_user(username: str, role: str | None) -> Any:
    user = UserFactory(username=username)
    if role:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user


@pytest.fixture
def analyst(db: Any) -> Any:
    return make_user("alice", ANALYST)


@pytest.fixture
def curator(db: Any) -> Any:
    return make_user("carol", CURATOR)


@pytest.fixture
def nobody(db: Any) -> Any:
    return make_user("norole", None)


def token_client(user: Any) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def as_analyst(analyst: Any) -> APIClient:
    return token_client(analyst)


@pytest.fixture
def as_curator(curator: Any) -> APIClient:
    return token_client(curator)


@pytest.fixture
def as_nobody(nobody: Any) -> APIClient:
    return token_client(nobody)


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


def error_of(response: Any) -> dict[str, Any]:
    """The error object every failed request carries."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    return body["error"]


ClientFor = Callable[[Any], APIClient]
