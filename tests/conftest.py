"""Shared fixtures: the real PostgreSQL (embedded, or DATABASE_URL) and a real Celery worker.

The worker consumes from Redis when one answers on 127.0.0.1:6379 (as on CI machines),
otherwise from the serverless filesystem broker in a temporary folder, so the suite also
passes on a fresh laptop. Tests that need the worker use the `worker` fixture, which
implies transactional database access (the worker thread has its own connection).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest


def _redis_answers(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def pytest_configure(config: Any) -> None:
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
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_reliability_{os.getpid()}"


@pytest.fixture(scope="session")
def celery_worker_session(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
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
def worker(celery_worker_session: Any, transactional_db: Any) -> Any:
    """A real Celery worker on a real broker, consuming the product's queues."""
    return celery_worker_session


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real offline embedding model (all-MiniLM-L6-v2 from its PyPI package)."""
    from sources.embedding import configured_embedder

    return configured_embedder()
