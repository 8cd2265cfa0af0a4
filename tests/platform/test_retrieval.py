"""Per-source and pooled retrieval over pgvector (HNSW and exact), in the real PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from sources.models import Chunk, Source
from sources.retrieval import PgRetriever
from tests.factories import DocumentFactory, SourceFactory

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered_vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    """Random unit vectors around a few topic centres: closer to real embeddings than pure noise."""
    picks = centres[rng.integers(0, len(centres), n)]
    return unit(picks + 0.35 * rng.standard_normal((n, DIM)) / np.sqrt(DIM) * 4)


def build_corpus(sizes: dict[str, int], seed: int = 7) -> tuple[dict[str, Source], np.ndarray]:
    """One document per source, `size` chunks each, bulk-inserted; returns sources and centres."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((24, DIM)))
    sources: dict[str, Source] = {}
    for name, size in sizes.items():
        source = SourceFactory(name=name, chunk_count=size)
        document = DocumentFactory(source=source, title=f"{name} doc", text=name)
        vectors = clustered_vectors(rng, size, centres)
        Chunk.objects.bulk_create(
            [
                Chunk(document=document, source=source, ordinal=i, text=f"{name} chunk {i}", embedding=vectors[i])
                for i in range(size)
            ],
            batch_size=2000,
        )
        sources[name] = source
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sources_chunk")
        cursor.execute("ANALYZE sources_source")
    return sources, centres


def query_vectors(centres: np.ndarray, n: int, seed: int = 99) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return clustered_vectors(rng, n, centres)


CORPUS = {"big-a": 3000, "big-b": 2500, "medium": 600, "tiny": 4}


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker):
    """~6000 chunks in two big sources and one medium; one source holds only 4 chunks.

    Built once per module and committed (inserting into the HNSW index is the slow part);
    each test still runs in its own rolled-back transaction on top of it.
    """
    with django_db_blocker.unblock():
        built = build_corpus(CORPUS)
    yield built
    with django_db_blocker.unblock():
        Source.objects.filter(name__in=list(CORPUS)).delete()


@pytest.fixture
def big_and_tiny(db, corpus):
    return corpus


def force_hnsw() -> None:
    """On a corpus this small the planner rightly prefers reading a source's rows through the
    source_id index and sorting them; make sorting look expensive (for this test's transaction
    only) so that the HNSW branch really walks the HNSW index."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")


def plan(exact_below: int, ids: list[int], query: np.ndarray) -> str:
    """The executed plan; returns the HNSW scan line (or '' when the plan has none)."""
    from sources.retrieval import _PER_SOURCE_SQL, _vector_literal

    with connection.cursor() as cursor:
        params = {"q": _vector_literal(query), "k": 3, "ids": ids, "exact_below": exact_below}
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + _PER_SOURCE_SQL, params)
        return next((row[0] for row in cursor.fetchall() if "chunk_embedding_hnsw" in row[0]), "")


def assert_sorted(passages):
    distances = [p.distance for p in passages]
    assert distances == sorted(distances)


@pytest.mark.parametrize("exact_below", [0, 10_000], ids=["hnsw-for-all", "exact-for-all"])
def test_every_source_gets_k_chunks_even_a_tiny_one_among_thousands(big_and_tiny, exact_below):
    sources, centres = big_and_tiny
    if exact_below == 0:
        force_hnsw()
        walked = plan(exact_below, [sources["tiny"].pk], centres[0])
        assert walked and "never executed" not in walked
    retriever = PgRetriever(exact_below=exact_below)
    ids = [s.pk for s in sources.values()]
    for query in query_vectors(centres, 20):
        result = retriever.top_k_per_source(query, ids, 3)
        assert set(result) == set(ids)
        for name, source in sources.items():
            passages = result[source.pk]
            assert len(passages) == 3, name
            assert all(p.source_id == source.pk for p in passages)
            assert_sorted(passages)


def test_a_source_with_fewer_chunks_than_k_returns_all_of_them(big_and_tiny):
    sources, centres = big_and_tiny
    for exact_below in (0, 10_000):
        result = PgRetriever(exact_below=exact_below).top_k_per_source(centres[0], [sources["tiny"].pk], 10)
        assert sorted(p.text for p in result[sources["tiny"].pk]) == [f"tiny chunk {i}" for i in range(4)]


def test_results_carry_the_document_title_and_the_cosine_distance(big_and_tiny):
    sources, centres = big_and_tiny
    query = centres[3]
    [best] = PgRetriever().top_k_per_source(query, [sources["medium"].pk], 1)[sources["medium"].pk]
    chunk = Chunk.objects.get(pk=best.chunk_id)
    assert best.title == "medium doc"
    assert best.document_id == chunk.document_id
    assert best.distance == pytest.approx(1 - float(np.asarray(chunk.embedding) @ query), abs=1e-5)


def test_all_sources_are_searched_in_one_sql_statement(big_and_tiny, django_assert_num_queries):
    sources, centres = big_and_tiny
    ids = [s.pk for s in sources.values()]
    retriever = PgRetriever(exact_below=1000)  # mixes both branches: big sources HNSW, tiny exact
    with django_assert_num_queries(1):
        result = retriever.top_k_per_source(centres[0], ids, 3)
    assert all(len(result[i]) == 3 for i in ids)


def test_the_hnsw_branch_walks_the_index_and_small_sources_never_do(big_and_tiny):
    sources, centres = big_and_tiny
    ids = [s.pk for s in sources.values()]
    force_hnsw()
    walked = plan(0, ids, centres[0])
    assert walked and "never executed" not in walked
    assert "never executed" in plan(10_000, ids, centres[0]) or plan(10_000, ids, centres[0]) == ""


def test_hnsw_results_agree_with_exact_search(big_and_tiny):
    sources, centres = big_and_tiny
    ids = [s.pk for s in sources.values()]
    force_hnsw()
    hnsw = PgRetriever(exact_below=0)
    k, hits, total = 3, 0, 0
    for query in query_vectors(centres, 60, seed=5):
        approximate = hnsw.top_k_per_source(query, ids, k)
        exact = hnsw.exact_top_k_per_source(query, ids, k)
        for sid in ids:
            assert len(exact[sid]) == k
            hits += len({p.chunk_id for p in approximate[sid]} & {p.chunk_id for p in exact[sid]})
            total += k
    assert hits / total >= 0.9, hits / total


def test_exact_search_does_not_switch_off_index_scans_for_later_queries_in_the_transaction(big_and_tiny):
    sources, centres = big_and_tiny
    retriever = PgRetriever(exact_below=0)
    with transaction.atomic(), connection.cursor() as cursor:
        retriever.exact_top_k_per_source(centres[0], [sources["big-a"].pk], 3)
        cursor.execute("SHOW enable_indexscan")
        assert cursor.fetchone()[0] == "on"


def test_pooled_top_k_searches_only_active_sources(big_and_tiny):
    sources, centres = big_and_tiny
    Source.objects.filter(pk=sources["big-a"].pk).update(active=False)
    query = centres[1]
    pooled = PgRetriever().top_k_pooled(query, 10)
    assert len(pooled) == 10
    assert sources["big-a"].pk not in {p.source_id for p in pooled}
    assert_sorted(pooled)
    # The same ten as an exact search over the active sources' chunks.
    active = [s.pk for n, s in sources.items() if n != "big-a"]
    exact = PgRetriever().exact_top_k_per_source(query, active, 10)
    best = sorted((p for ps in exact.values() for p in ps), key=lambda p: p.distance)[:10]
    assert len({p.chunk_id for p in pooled} & {p.chunk_id for p in best}) >= 9


def test_no_sources_means_no_query_and_an_empty_result(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert PgRetriever().top_k_per_source(np.ones(DIM, dtype=np.float32), [], 3) == {}


def test_a_source_without_chunks_gets_an_empty_list(big_and_tiny):
    sources, centres = big_and_tiny
    empty = SourceFactory(name="empty")
    result = PgRetriever().top_k_per_source(centres[0], [empty.pk, sources["tiny"].pk], 3)
    assert result[empty.pk] == []
    assert len(result[sources["tiny"].pk]) == 3


def test_ingested_text_is_found_by_a_paraphrased_question(db, embedder, tmp_path):
    from sources.services import ingest_files

    source, other = SourceFactory(name="facts"), SourceFactory(name="other")
    (tmp_path / "a.jsonl").write_text(
        '{"text": "The Eiffel Tower is 330 metres tall.", "title": "Eiffel"}\n'
        '{"text": "Bananas are a good source of potassium.", "title": "Bananas"}\n'
        '{"text": "The Danube flows through ten countries.", "title": "Danube"}\n'
    )
    (tmp_path / "b.txt").write_text("Chess is played on a board of 64 squares.")
    ingest_files(source, [tmp_path / "a.jsonl"], embedder)
    ingest_files(other, [tmp_path / "b.txt"], embedder)
    [query] = embedder.encode(["How high is the Eiffel tower?"])
    result = PgRetriever().top_k_per_source(query, [source.pk, other.pk], 2)
    assert result[source.pk][0].title == "Eiffel"
    assert [p.title for p in result[other.pk]] == ["b"]
