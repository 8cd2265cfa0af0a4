"""Helpers the test areas share: the API's error shape and token clients, waiting on a
condition, and the worker-fault harness (a broker, the test database's URL, what a run stored)."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import ReliabilityScore, RunResponse
from reliability_site.celery import app


def wait_until(
    condition: Callable[[], Any],
    timeout: float,
    what: str,
    poll: float = 0.05,
    detail: Callable[[], str] | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f"\n{detail()}" if detail else ""))


def database_url(settings_dict: dict[str, Any]) -> str:
    """A DATABASE_URL for reliability_site.dburl naming this connection's (test) database."""
    host, port = settings_dict["HOST"], settings_dict["PORT"]
    credentials = f"{quote(settings_dict['USER'])}:{quote(settings_dict['PASSWORD'])}@"
    if host.startswith("/"):  # a Unix socket folder
        return f"postgresql://{credentials}{f':{port}' if port else ''}/{settings_dict['NAME']}?{urlencode({'host': host})}"
    return f"postgresql://{credentials}{host}{f':{port}' if port else ''}/{settings_dict['NAME']}"


class Broker:
    """A broker namespace of its own: a key prefix on this session's Redis, or a folder."""

    def __init__(self, tmp: Path) -> None:
        self.url = app.conf.broker_url if str(app.conf.broker_url).startswith("redis") else ""
        self.prefix = f"fault-{uuid.uuid4().hex[:12]}:"
        self.folder = tmp / "broker"

    def env(self) -> dict[str, str]:
        if self.url:
            return {"CELERY_BROKER_URL": self.url, "CELERY_BROKER_KEY_PREFIX": self.prefix}
        return {"CELERY_BROKER_URL": "", "BROKER_DIR": str(self.folder)}

    def purge(self, queue: str) -> int:
        """Drop the messages waiting in a queue of this namespace; returns how many."""
        from kombu import Connection
        from kombu.transport.virtual import Channel

        from reliability_site.celery import broker_settings

        if self.url:
            options: Any = {"global_keyprefix": self.prefix}
        else:
            options = broker_settings("", self.folder)["broker_transport_options"]
        with Connection(self.url or "filesystem://", transport_options=options) as conn:
            channel = conn.default_channel
            assert isinstance(channel, Channel)  # redis and filesystem are both virtual transports
            return int(channel.queue_purge(queue) or 0)

    def clear(self) -> None:
        """Drop what is left under the prefix (messages a killed worker held unacknowledged)."""
        if self.url:
            import redis

            client = redis.Redis.from_url(self.url)
            keys = list(client.scan_iter(f"{self.prefix}*"))
            if keys:
                client.delete(*keys)


def scores_of(run_id: int) -> dict[str, float]:
    return dict(ReliabilityScore.objects.filter(run_id=run_id).values_list("source__name", "reliability"))


def responses_of(run_id: int) -> dict[tuple[str, str], str]:
    rows = RunResponse.objects.filter(run_id=run_id).values_list("query__question", "source__name", "response")
    return {(question, source): response for question, source, response in rows}


def error_of(response: Any) -> dict[str, Any]:
    """The error object every failed request carries."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    error: dict[str, Any] = body["error"]
    return error


def token_header(user: User) -> str:
    """The Authorization header value an API client of the account sends."""
    token, _ = Token.objects.get_or_create(user=user)
    return f"Token {token.key}"


def token_client(user: User) -> APIClient:
    """An API client that authenticates with the account's token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token_header(user))
    return client


def as_list(value: object) -> list[Any]:
    """A value the code types loosely (a strategy's trace, a stored JSON summary, a view's
    ``dict[str, object]``) that the test expects to be a list: checked, then readable."""
    assert isinstance(value, list), f"expected a list, got {value!r}"
    return value


def as_dict(value: object) -> dict[str, Any]:
    """As :func:`as_list`, for a value the test expects to be a JSON object (a dict)."""
    assert isinstance(value, dict), f"expected a dict, got {value!r}"
    return value


def must_search(pattern: str, text: str) -> re.Match[str]:
    """``re.search`` for text the test expects to hold the pattern: fails, showing the text, if not."""
    match = re.search(pattern, text)
    assert match is not None, f"{pattern!r} not found in {text!r}"
    return match
