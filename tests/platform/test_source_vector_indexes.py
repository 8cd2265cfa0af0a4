"""Per-source HNSW indexes (sources/vector_index.py, migration 0004): they agree with exact
search, small sources still get k results, and the index follows its source: built by a job
once ingestion passes the threshold, kept in step with every chunk write, dropped with it."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from sources import vector_index
from sources.models import Chunk, Source, SourceVectorIndex
from sources.retrieval import PgRetriever
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.factories import SourceFactory
from tests.platform.vectors import DIM, add_chunks, clustered, hnsw_scans, unit, walk_graphs_even_when_small

SIZES = {"idx-big": 1200, "idx-medium": 900, "idx-small": 150, "idx-tiny": 4}
INDEXED = ("idx-big", "idx-medium")


@pytest.fixture(scope="module")
def indexed_corpus(django_db_setup, django_db_blocker):
    """Two sources with HNSW indexes of their own, a small and a 4-chunk source without.
    Built once per module outside any transaction (CREATE INDEX CONCURRENTLY needs that);
    each test runs in its own rolled-back transaction on top."""
    rng = np.random.default_rng(3)
    centres = unit(rng.standard_normal((16, DIM)))
    with django_db_blocker.unblock():
        sources = {}
        for name, size in SIZES.items():
            source = SourceFactory(name=name, chunk_count=size)
            add_chunks(source, clustered(rng, size, centres))
            sources[name] = source
        outcomes = [vector_index.build(sources[name].pk) for name in INDEXED]
        assert [o.status for o in outcomes] == ["built", "built"]
    yield sources, centres
    with django_db_blocker.unblock():
        Source.objects.filter(name__in=list(SIZES)).delete()


@pytest.fixture
def corpus(db, indexed_corpus):
    return indexed_corpus


def test_indexed_search_agrees_with_exact_search_and_returns_exact_distances(corpus):
    sources, centres = corpus
    ids = [s.pk for s in sources.values()]
    retriever = PgRetriever()
    hits = total = 0
    for query in clustered(np.random.default_rng(11), 60, centres):
        approximate = retriever.top_k_per_source(query, ids, 3)
        exact = retriever.exact_top_k_per_source(query, ids, 3)
        for sid in ids:
            assert len(approximate[sid]) == len(exact[sid]) == 3
            exact_distance = {p.chunk_id: p.distance for p in exact[sid]}
            for passage in approximate[sid]:
                if passage.chunk_id in exact_distance:  # re-ranked in float: the very same distance
                    assert passage.distance == pytest.approx(exact_distance[passage.chunk_id], abs=1e-6)
            hits += len(exact_distance.keys() & {p.chunk_id for p in approximate[sid]})
            total += 3
    assert hits / total >= 0.95, hits / total


def test_the_indexed_sources_walk_their_own_graph_and_the_small_ones_none(corpus):
    sources, centres = corpus
    ids = [s.pk for s in sources.values()]
    walk_graphs_even_when_small()
    before = [hnsw_scans(sources[name].pk) for name in INDEXED]
    PgRetriever().top_k_per_source(centres[0], ids, 3)
    assert [hnsw_scans(sources[name].pk) - b for name, b in zip(INDEXED, before, strict=True)] == [1, 1]
    assert set(vector_index.existing_tables()) >= {sources[name].pk for name in INDEXED}
    assert not {sources["idx-small"].pk, sources["idx-tiny"].pk} & set(vector_index.existing_tables())


def test_a_four_chunk_source_gets_k_results_and_all_four_when_k_is_larger(corpus):
    sources, centres = corpus
    tiny = sources["idx-tiny"].pk
    ids = [s.pk for s in sources.values()]
    for query in clustered(np.random.default_rng(5), 10, centres):
        result = PgRetriever().top_k_per_source(query, ids, 3)
        assert {sid: len(result[sid]) for sid in ids} == dict.fromkeys(ids, 3)
    everything = PgRetriever().top_k_per_source(centres[0], [tiny, sources["idx-big"].pk], 10)
    assert sorted(p.text for p in everything[tiny]) == [f"idx-tiny chunk {i}" for i in range(4)]
    assert len(everything[sources["idx-big"].pk]) == 10


def test_a_source_whose_index_is_not_ready_is_searched_exactly(corpus):
    sources, centres = corpus
    big = sources["idx-big"].pk
    SourceVectorIndex.objects.filter(source_id=big).update(state=SourceVectorIndex.State.BUILDING)
    walk_graphs_even_when_small()
    query = centres[2]
    before = hnsw_scans(big)
    result = PgRetriever().top_k_per_source(query, [big], 5)
    exact = PgRetriever().exact_top_k_per_source(query, [big], 5)
    assert [p.chunk_id for p in result[big]] == [p.chunk_id for p in exact[big]]
    assert hnsw_scans(big) == before


def test_chunks_added_changed_and_deleted_after_the_build_are_searched_as_they_are_now(corpus):
    sources, centres = corpus
    big = sources["idx-big"]
    query = unit(np.random.default_rng(8).standard_normal((1, DIM)))[0]
    [added] = add_chunks(big, query[None, :], start=10_000)  # the query itself: the nearest chunk there is
    [best] = PgRetriever().top_k_per_source(query, [big.pk], 1)[big.pk]
    assert best.chunk_id == added.pk and best.distance == pytest.approx(0, abs=1e-6)

    Chunk.objects.filter(pk=added.pk).update(embedding=-query)  # re-embedded: now the farthest
    assert added.pk not in {p.chunk_id for p in PgRetriever().top_k_per_source(query, [big.pk], 3)[big.pk]}

    old_best = PgRetriever().top_k_per_source(centres[4], [big.pk], 1)[big.pk][0].chunk_id
    Chunk.objects.filter(pk=old_best).delete()
    after = PgRetriever().top_k_per_source(centres[4], [big.pk], 3)[big.pk]
    assert len(after) == 3 and old_best not in {p.chunk_id for p in after}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), count(c.id) FROM {vector_index.table_name(big.pk)} v "
            "LEFT JOIN sources_chunk c ON c.id = v.chunk_id AND v.embedding = c.embedding::halfvec"
        )
        stored, matching = cursor.fetchone()
    assert stored == matching == Chunk.objects.filter(source=big).count()


def test_all_sources_are_still_searched_in_one_statement(corpus, django_assert_num_queries):
    sources, centres = corpus
    ids = [s.pk for s in sources.values()]
    with django_assert_num_queries(1):
        result = PgRetriever().top_k_per_source(centres[1], ids, 3)
    assert all(len(result[i]) == 3 for i in ids)


# --- The lifecycle: a source added (index built by a job), removed (index dropped) -----------


def test_ingesting_past_the_threshold_builds_the_index_in_a_job_and_deleting_the_source_drops_it(
    worker, embedder, settings, tmp_path
):
    settings.SOURCE_INDEX_MIN_CHUNKS = 25
    path = tmp_path / "facts.jsonl"
    path.write_text(
        "".join(
            f'{{"text": "Fact number {i}: the {i}th bridge of the city is {i * 7} metres long."}}\n' for i in range(30)
        )
    )
    call_command("ingest", str(path), source="bridges", wait=True, timeout=180)
    source = Source.objects.get(name="bridges")
    assert source.chunk_count == 30
    build = Job.objects.filter(params__source_id=source.pk, params__what="vector index").get()
    build = wait_for_job(build.pk, timeout=120)
    assert build.state == Job.State.SUCCEEDED, build.error
    entry = SourceVectorIndex.objects.get(source=source)
    assert (entry.state, entry.chunks) == (SourceVectorIndex.State.READY, 30)
    assert vector_index.valid_index(source.pk)

    [question] = embedder.encode(["How long is the 12th bridge of the city?"])
    [best] = PgRetriever().top_k_per_source(question, [source.pk], 1)[source.pk]
    assert "12th bridge" in best.text

    source.delete()
    assert source.pk not in vector_index.existing_tables()
    assert not SourceVectorIndex.objects.filter(source_id=source.pk).exists()


def test_a_source_below_the_threshold_gets_no_index_job(db, settings):
    settings.SOURCE_INDEX_MIN_CHUNKS = 50
    source = SourceFactory(chunk_count=49)
    assert vector_index.request_build(source.pk) is None
    assert not SourceVectorIndex.objects.filter(source=source).exists()


def test_reconcile_builds_missing_indexes_and_drops_tables_of_deleted_sources(transactional_db, settings, capsys):
    settings.SOURCE_INDEX_MIN_CHUNKS = 40
    rng = np.random.default_rng(2)
    wanted = SourceFactory(name="needs-one", chunk_count=60)
    add_chunks(wanted, unit(rng.standard_normal((60, DIM))))
    small = SourceFactory(name="too-small", chunk_count=10)
    add_chunks(small, unit(rng.standard_normal((10, DIM))))
    with connection.cursor() as cursor:  # a table left behind by a source deleted mid-build
        cursor.execute(f"CREATE TABLE {vector_index.table_name(987654)} (chunk_id bigint PRIMARY KEY)")

    call_command("source_indexes", "--reconcile", "--dry-run")
    assert f"would build: [{wanted.pk}]" in capsys.readouterr().out
    call_command("source_indexes", "--reconcile")
    assert "built 1, dropped 1, failed 0" in capsys.readouterr().out
    assert set(vector_index.existing_tables()) == {wanted.pk}
    assert SourceVectorIndex.objects.get(source=wanted).state == SourceVectorIndex.State.READY

    call_command("source_indexes")
    listing = capsys.readouterr().out
    assert any(line.split()[:3] == [str(wanted.pk), "60", "ready"] for line in listing.splitlines())
    assert any(line.split()[:3] == [str(small.pk), "10", "none"] for line in listing.splitlines())
    assert vector_index.plan_reconcile() == ([], [])


def test_a_build_inside_a_transaction_is_refused_with_the_reason(db):
    source = SourceFactory()
    with pytest.raises(RuntimeError, match="outside transaction.atomic"):
        vector_index.build(source.pk)


def test_deleting_a_source_whose_table_is_busy_still_deletes_it_and_leaves_the_table_to_reconcile(
    transactional_db, settings
):
    """A build holding the table (here: another session's lock on it) must never make the
    source's delete fail: the trigger gives up on the DROP after lock_timeout, and reconcile
    drops the orphan."""
    import psycopg

    settings.SOURCE_INDEX_MIN_CHUNKS = 20
    source = SourceFactory(name="busy", chunk_count=30)
    add_chunks(source, unit(np.random.default_rng(4).standard_normal((30, DIM))))
    assert vector_index.build(source.pk).status == "built"
    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}) as other:
        other.execute(f"LOCK TABLE {vector_index.table_name(source.pk)} IN ACCESS SHARE MODE")
        source_id = source.pk
        source.delete()  # waits 5 s for the lock, then leaves the table
        other.rollback()
    assert not Source.objects.filter(pk=source_id).exists()
    assert source_id in vector_index.existing_tables()
    assert vector_index.plan_reconcile() == ([], [source_id])
    vector_index.reconcile()
    assert source_id not in vector_index.existing_tables()


def test_a_deadlock_while_queueing_the_build_after_ingestion_is_retried_then_logged_never_raised(
    db, settings, monkeypatch, caplog
):
    """Ingestion's on-commit hook met a deadlock with another backend (seen in CI): the
    documents are stored; the hook retries, and when it keeps failing it logs and leaves the
    build to reconcile, instead of raising into Django's on-commit logger."""
    from django.db import OperationalError

    settings.SOURCE_INDEX_MIN_CHUNKS = 1
    source = SourceFactory(chunk_count=5)
    calls: list[int] = []
    real = vector_index.request_build

    def deadlock_then_real(source_id: int, **kwargs: object) -> object:
        calls.append(source_id)
        if len(calls) == 1:
            raise OperationalError("deadlock detected")
        return real(source_id)

    monkeypatch.setattr(vector_index, "request_build", deadlock_then_real)
    job = vector_index.request_build_after_commit(source.pk)
    assert calls == [source.pk, source.pk]
    assert job is not None and job.params["source_id"] == source.pk

    def always_deadlock(source_id: int, **kwargs: object) -> object:
        raise OperationalError("deadlock detected")

    monkeypatch.setattr(vector_index, "request_build", always_deadlock)
    with caplog.at_level("WARNING", logger="sources.vector_index"):
        assert vector_index.request_build_after_commit(source.pk, attempts=2) is None
    assert "reconcile will queue it" in caplog.text
