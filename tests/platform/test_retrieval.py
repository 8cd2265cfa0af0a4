"""Per-source and pooled retrieval over pgvector (per-source HNSW graphs, exact search, the
all-chunks HNSW index), in the real PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from sources import vector_index
from sources.models import Chunk, Source, SourceVectorIndex
from sources.retrieval import PgRetriever
from tests.factories import DocumentFactory, SourceFactory
from tests.platform.vectors import (
    DIM,
    add_chunks,
    clustered,
    hnsw_scans,
    index_scans,
    unit,
    walk_graphs_even_when_small,
)


def build_corpus(sizes: dict[str, int], seed: int = 7) -> tuple[dict[str, Source], np.ndarray]:
    """One document per source, `size` chunks each, bulk-inserted; returns sources and centres."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((24, DIM)))
    sources: dict[str, Source] = {}
    for name, size in sizes.items():
        source = SourceFactory(name=name, chunk_count=size)
        DocumentFactory(source=source, title=f"{name} doc", text=name)
        add_chunks(source, clustered(rng, size, centres))
        sources[name] = source
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sources_chunk")
        cursor.execute("ANALYZE sources_source")
    return sources, centres


def query_vectors(centres: np.ndarray, n: int, seed: int = 99) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return clustered(rng, n, centres)


CORPUS = {"big-a": 3000, "big-b": 2500, "medium": 600, "tiny": 4}
INDEXED = ("big-a", "big-b")  # past SOURCE_INDEX_MIN_CHUNKS: an HNSW graph of their own


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker):
    """~6000 chunks in two big sources (each with its own HNSW index) and one medium; one
    source holds only 4 chunks.

    Built once per module and committed (inserting into the HNSW index is the slow part);
    each test still runs in its own rolled-back transaction on top of it.
    """
    with django_db_blocker.unblock():
        built = build_corpus(CORPUS)
        for name in INDEXED:
            assert vector_index.build(built[0][name].pk).status == "built"
    yield built
    with django_db_blocker.unblock():
        Source.objects.filter(name__in=list(CORPUS)).delete()


@pytest.fixture
def big_and_tiny(db, corpus):
    return corpus


def search_exactly_everywhere() -> None:
    """As while the big sources' indexes are being built (this test's transaction only)."""
    SourceVectorIndex.objects.update(state=SourceVectorIndex.State.BUILDING)


def assert_sorted(passages):
    distances = [p.distance for p in passages]
    assert distances == sorted(distances)


@pytest.mark.parametrize("indexed", [True, False], ids=["own-hnsw-for-big", "exact-for-all"])
def test_every_source_gets_k_chunks_even_a_tiny_one_among_thousands(big_and_tiny, indexed):
    sources, centres = big_and_tiny
    if not indexed:
        search_exactly_everywhere()
    retriever = PgRetriever()
    ids = [s.pk for s in sources.values()]
    before = hnsw_scans(sources["big-a"].pk)
    for query in query_vectors(centres, 20):
        result = retriever.top_k_per_source(query, ids, 3)
        assert set(result) == set(ids)
        for name, source in sources.items():
            passages = result[source.pk]
            assert len(passages) == 3, name
            assert all(p.source_id == source.pk for p in passages)
            assert_sorted(passages)
    assert hnsw_scans(sources["big-a"].pk) - before == (20 if indexed else 0)


def test_a_source_with_fewer_chunks_than_k_returns_all_of_them(big_and_tiny):
    sources, centres = big_and_tiny
    result = PgRetriever().top_k_per_source(centres[0], [sources["tiny"].pk], 10)
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
    retriever = PgRetriever()  # mixes both kinds: big sources by their own graph, the others exactly
    with django_assert_num_queries(1):
        result = retriever.top_k_per_source(centres[0], ids, 3)
    assert all(len(result[i]) == 3 for i in ids)


def test_the_big_sources_walk_their_own_graph_never_the_all_chunks_index(big_and_tiny):
    sources, centres = big_and_tiny
    ids = [s.pk for s in sources.values()]
    scans = ["chunk_embedding_hnsw", *(vector_index.table_name(sources[name].pk) + "_hnsw" for name in INDEXED)]
    walk_graphs_even_when_small()
    before = index_scans(scans)
    PgRetriever().top_k_per_source(centres[0], ids, 3)
    assert [a - b for a, b in zip(index_scans(scans), before, strict=True)] == [0, 1, 1]


def test_hnsw_results_agree_with_exact_search(big_and_tiny):
    sources, centres = big_and_tiny
    ids = [s.pk for s in sources.values()]
    retriever = PgRetriever()
    k, hits, total = 3, 0, 0
    for query in query_vectors(centres, 60, seed=5):
        approximate = retriever.top_k_per_source(query, ids, k)
        exact = retriever.exact_top_k_per_source(query, ids, k)
        for sid in ids:
            assert len(exact[sid]) == k
            hits += len({p.chunk_id for p in approximate[sid]} & {p.chunk_id for p in exact[sid]})
            total += k
    assert hits / total >= 0.95, hits / total


def test_exact_search_does_not_switch_off_index_scans_for_later_queries_in_the_transaction(big_and_tiny):
    sources, centres = big_and_tiny
    retriever = PgRetriever()
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
