"""Shared fixtures: the real PostgreSQL (embedded, or DATABASE_URL), a real Celery worker, and
one set of accounts (an analyst, a curator, an account without a role) with clients for each.

The worker consumes from Redis when one answers on 127.0.0.1:6379 (as on CI machines),
otherwise from the serverless filesystem broker in a temporary folder, so the suite also
passes on a fresh laptop. Tests that need the worker use the `worker` fixture, which
implies transactional database access (the worker thread has its own connection).

Accounts (all with the password tests.factories.PASSWORD):
    analyst  "alice", in the analyst group
    curator  "carol", in the curator group
    nobody   "norole", in no group
Clients: <role>_client is a Django test client logged in as that account (pages), as_<role>
an API client sending the account's token; `anonymous` is an API client without credentials.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django import DjangoDbBlocker
from rest_framework.test import APIClient

from tests.factories import AnalystFactory, CuratorFactory, UserFactory
from tests.helpers import token_client

if TYPE_CHECKING:
    from celery.worker import WorkController

    from core.engine.types import Embedder


def _redis_answers(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def pytest_configure(config: pytest.Config) -> None:
    """Point the Celery app at this session's own broker and give the session its own
    test database, so concurrent runs (and a running dev worker) never share either."""
    from django.conf import settings

    from reliability_site.celery import app, broker_settings

    tag = f"{socket.gethostname()}-{os.getpid()}"
    broker_url = os.environ.get("CELERY_BROKER_URL", "")
    if not broker_url and _redis_answers():
        broker_url = "redis://127.0.0.1:6379/15"
    if broker_url:
        options = broker_settings(broker_url, "")
        # Keys prefixed per session: parallel sessions on one Redis cannot steal tasks.
        options["broker_transport_options"] = {"global_keyprefix": f"test-{tag}:"}
    else:
        options = broker_settings("", tempfile.mkdtemp(prefix="rrag-broker-"))
    app.conf.broker_url  # noqa: B018 - load the app's own configuration first, then override it
    app.conf.update(options)
    # DatabaseSettings (reliability_site/dburl.py) does not list Django's TEST key.
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_reliability_{os.getpid()}"  # type: ignore[typeddict-item]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the real worker (the `worker` fixture or the session worker it
    rests on, directly or through another fixture) carries the `worker` marker, so that
    `-m "not worker"` leaves them all out; browser tests likewise carry `browser`."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"worker", "celery_worker_session"}:
            item.add_marker(pytest.mark.worker)
        if "browser" in names:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def celery_worker_session(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[WorkController]:
    from celery.contrib.testing.worker import start_worker

    from reliability_site.celery import app

    with (
        django_db_blocker.unblock(),
        start_worker(
            app,
            pool="solo",
            concurrency=1,
            queues=["ingest", "gpu", "default"],
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30,
        ) as worker,
    ):
        yield worker


@pytest.fixture
def worker(celery_worker_session: WorkController, transactional_db: None) -> WorkController:
    """A real Celery worker on a real broker, consuming the product's queues."""
    return celery_worker_session


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real offline embedding model (all-MiniLM-L6-v2 from its PyPI package)."""
    from runtime.backends import configured_embedder

    return configured_embedder()


# --- Accounts and their clients -------------------------------------------------------


@pytest.fixture
def analyst(db: None) -> User:
    return AnalystFactory(username="alice")


@pytest.fixture
def curator(db: None) -> User:
    return CuratorFactory(username="carol")


@pytest.fixture
def nobody(db: None) -> User:
    """An account in no group: signed in, but with no role."""
    return UserFactory(username="norole")


def logged_in_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def analyst_client(analyst: User) -> Client:
    return logged_in_client(analyst)


@pytest.fixture
def curator_client(curator: User) -> Client:
    return logged_in_client(curator)


@pytest.fixture
def nobody_client(nobody: User) -> Client:
    return logged_in_client(nobody)


@pytest.fixture
def as_analyst(analyst: User) -> APIClient:
    return token_client(analyst)


@pytest.fixture
def as_curator(curator: User) -> APIClient:
    return token_client(curator)


@pytest.fixture
def as_nobody(nobody: User) -> APIClient:
    return token_client(nobody)


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()
