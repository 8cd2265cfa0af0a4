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
    # Decide the broker before Django settings are read.
    if not os.environ.get("CELERY_BROKER_URL") and _redis_answers():
        os.environ["CELERY_BROKER_URL"] = "redis://127.0.0.1:6379/15"
    if not os.environ.get("CELERY_BROKER_URL"):
        os.environ["BROKER_DIR"] = tempfile.mkdtemp(prefix="rrag-broker-")
    os.environ.setdefault("JOB_STALE_SECONDS", "900")


@pytest.fixture(scope="session")
def celery_worker_session(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
    from celery.contrib.testing.worker import start_worker

    from reliability_site.celery import app

    if os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"):
        # A clean slate: leftovers of an interrupted run must not be consumed by this one.
        import redis

        redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()
    with django_db_blocker.unblock():
        with start_worker(
            app,
            pool="solo",
            concurrency=1,
            queues=["ingest", "gpu", "default"],
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30,
        ) as worker:
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
