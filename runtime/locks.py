"""Claims that several worker processes (on several machines) respect: PostgreSQL session
advisory locks, taken without waiting.

A neutral module below both apps: estimation (core.services.estimation.locks names its
batches and finishing claims) and the sources app (sources.claim_store embeds each claim key
once) take their locks here.

A worker answering a batch of a run holds the batch's lock while it works, and the
coordinator that estimates a run holds the run's finishing lock: a second worker given the
same batch (a redelivered or re-sent message) or a second coordinator step finds the lock
taken and leaves the work to the holder instead of doing it twice. A worker that dies drops
its database connection, and PostgreSQL drops its locks with it, so nothing stays claimed by
a dead process. Locks are per connection: run workers on direct connections or behind a
pooler in session mode (see docs/operations.md). Correctness never rests on these locks
alone: responses are unique per (run, query, source) and stored with ON CONFLICT DO NOTHING.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)


def lock_key(name: str) -> int:
    """The signed 64-bit key PostgreSQL advisory locks take, from a name."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


@contextmanager
def claim(name: str) -> Iterator[bool]:
    """Take the advisory lock `name` if no other session holds it; yields whether it was
    taken, and releases it on leaving."""
    key = lock_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
            except DatabaseError:  # the connection is gone, and the lock with it
                logger.warning("could not release the advisory lock %r: its connection was lost", name)
