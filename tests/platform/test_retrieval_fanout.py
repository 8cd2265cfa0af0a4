"""A per-source search over many sources split across connections (sources/retrieval.py,
RETRIEVAL_FANOUT): the same rows as one statement, the shares really run on other
connections, and never inside a transaction, whose uncommitted rows other connections
cannot see."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from core.engine.types import Passage
from sources import retrieval, vector_index
from sources.retrieval import PgRetriever, fanout_shares
from tests.factories import SourceFactory
from tests.platform.vectors import DIM, add_chunks, clustered, unit


@pytest.fixture(autouse=True)
def _close_pool_connections():
    """The retrieval threads keep their connections open; the test database is dropped later."""
    yield
    retrieval.close_pool_connections()


def test_shares_deal_the_sources_round_robin_and_never_leave_one_empty():
    assert fanout_shares([5, 6, 7, 8, 9], 2) == [[5, 7, 9], [6, 8]]
    assert fanout_shares([5, 6], 4) == [[5], [6]]
    assert fanout_shares([5, 6, 7], 1) == [[5, 6, 7]]


def _corpus(rng: np.random.Generator, sizes: list[int]) -> tuple[list[int], np.ndarray]:
    centres = unit(rng.standard_normal((8, DIM)))
    ids = []
    for i, size in enumerate(sizes):
        source = SourceFactory(name=f"fan-{i}", chunk_count=size)
        add_chunks(source, clustered(rng, size, centres))
        ids.append(source.pk)
    return ids, centres


def _rows(result: dict[int, list[Passage]]) -> dict[int, list[tuple[int, float]]]:
    return {sid: [(p.chunk_id, round(p.distance, 6)) for p in passages] for sid, passages in result.items()}


@pytest.mark.django_db(transaction=True)
def test_a_fanned_out_search_returns_what_one_statement_returns_from_other_connections(settings, monkeypatch):
    settings.RETRIEVAL_FANOUT_MIN_SOURCES = 3
    settings.SOURCE_INDEX_MIN_CHUNKS = 300
    ids, centres = _corpus(np.random.default_rng(5), [4, 40, 350, 25, 320, 9, 60])
    built = [vector_index.build(sid).status for sid in ids if sid in (ids[2], ids[4])]
    assert built == ["built", "built"]  # graphs for two, exact search for the others

    backends: list[int] = []
    real_fetch = retrieval._fetch

    def fetch(sql, params):
        with connection.cursor() as cursor:  # the connection of the thread that runs the share
            cursor.execute("SELECT pg_backend_pid()")
            backends.append(cursor.fetchone()[0])
        return real_fetch(sql, params)

    monkeypatch.setattr(retrieval, "_fetch", fetch)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = cursor.fetchone()[0]
    one, split = PgRetriever(fanout=1), PgRetriever(fanout=3)
    assert [len(s) for s in split.shares(ids)] == [3, 2, 2]
    for query in clustered(np.random.default_rng(8), 12, centres):
        backends.clear()
        alone = one.top_k_per_source(query, ids, 3)
        assert backends == [own]
        backends.clear()
        fanned = split.top_k_per_source(query, ids, 3)
        # Three statements; the caller's connection ran one share, the retrieval threads' own
        # connections the others (one thread may take both when the first share is quick).
        assert len(backends) == 3 and backends.count(own) == 1 and len(set(backends)) >= 2
        assert _rows(fanned) == _rows(alone)
        assert [len(fanned[sid]) for sid in ids] == [3] * len(ids)  # the 4-chunk source too


@pytest.mark.django_db(transaction=True)
def test_the_passages_stored_vectors_reach_the_sink_from_every_share(settings):
    settings.RETRIEVAL_FANOUT_MIN_SOURCES = 2
    ids, centres = _corpus(np.random.default_rng(6), [12, 15, 20, 7])
    heard: dict[str, np.ndarray] = {}
    retriever = PgRetriever(fanout=2, vector_sink=lambda texts, vectors: heard.update(zip(texts, vectors, strict=True)))
    result = retriever.top_k_per_source(centres[0], ids, 2)
    texts = {p.text for passages in result.values() for p in passages}
    assert len(texts) == 8 and set(heard) == texts
    assert all(v.shape == (DIM,) for v in heard.values())


def test_inside_a_transaction_the_search_is_not_split_and_sees_its_own_rows(db, settings):
    """Each test here runs inside a transaction: another connection could not see these rows."""
    settings.RETRIEVAL_FANOUT_MIN_SOURCES = 2
    assert connection.in_atomic_block
    ids, centres = _corpus(np.random.default_rng(7), [10, 10, 10, 10])
    retriever = PgRetriever(fanout=4)
    assert retriever.shares(ids) == [ids]
    result = retriever.top_k_per_source(centres[0], ids, 3)
    assert [len(result[sid]) for sid in ids] == [3, 3, 3, 3]


def test_few_sources_use_one_statement(settings):
    settings.RETRIEVAL_FANOUT_MIN_SOURCES = 40
    assert PgRetriever(fanout=2).shares(list(range(1, 40))) == [list(range(1, 40))]
    assert len(PgRetriever(fanout=2).shares(list(range(1, 41)))) == 2


@pytest.mark.django_db(transaction=True)
def test_a_retrieval_thread_whose_connection_was_lost_reconnects(settings):
    settings.RETRIEVAL_FANOUT_MIN_SOURCES = 2
    ids, centres = _corpus(np.random.default_rng(9), [6, 6, 6, 6])
    retriever = PgRetriever(fanout=2)  # one retrieval thread
    first = retriever.top_k_per_source(centres[0], ids, 2)
    [thread_connection] = [w for w in retrieval._POOL_CONNECTIONS if w.connection is not None]
    lost = thread_connection.connection.info.backend_pid
    with connection.cursor() as cursor:  # as a server restart or an idle timeout would
        cursor.execute("SELECT pg_terminate_backend(%s)", [lost])
        assert cursor.fetchone()[0] is True
    again = retriever.top_k_per_source(centres[0], ids, 2)
    assert _rows(again) == _rows(first)
    assert thread_connection.connection.info.backend_pid != lost
