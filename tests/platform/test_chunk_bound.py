"""Chunks have a hard character bound (CHUNK_MAX_CHARS): a text without spaces is no longer
one 2 MB chunk, and ordinary texts are chunked exactly as before."""

from __future__ import annotations

from pathlib import Path

from core.engine.chunking import chunk_text, split_chars
from sources.models import Chunk
from sources.services import ingest_files
from tests.factories import SourceFactory
from tests.platform.helpers import TEXT, CountingEmbedder


def test_a_text_of_two_million_characters_without_spaces_becomes_chunks_of_at_most_max_chars():
    text = "x" * 1_999_000
    chunks = chunk_text(text, 120, 20, max_chars=2000)
    assert len(chunks) == 1000
    assert max(len(c.text) for c in chunks) == 2000
    assert "".join(c.text for c in chunks) == text  # cut between characters, nothing lost
    assert [c.ordinal for c in chunks] == list(range(1000))


def test_a_window_of_long_words_is_cut_at_whitespace_within_the_bound():
    word = "a" * 300
    chunks = chunk_text(" ".join([word] * 20), 120, 20, max_chars=1000)
    assert all(len(c.text) <= 1000 for c in chunks)
    assert all(set(piece) == {"a"} for c in chunks for piece in c.text.split())  # no word is cut
    assert sum(len(c.text.split()) for c in chunks) == 20


def test_ordinary_texts_are_chunked_exactly_as_without_the_bound():
    for size, overlap in [(12, 0), (20, 5), (30, 10), (200, 20)]:
        assert chunk_text(TEXT, size, overlap, max_chars=2000) == chunk_text(TEXT, size, overlap, max_chars=10**9)


def test_split_chars_prefers_the_last_space_and_falls_back_to_a_hard_cut():
    assert split_chars("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert split_chars("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_ingestion_stores_no_chunk_longer_than_the_setting(db, tmp_path: Path, settings):
    settings.CHUNK_MAX_CHARS = 500
    source = SourceFactory(name="nospaces")
    path = tmp_path / "blob.txt"
    path.write_text("z" * 5_000)
    [outcome] = ingest_files(source, [path], CountingEmbedder())
    assert outcome.error == "" and outcome.chunks == 10
    texts = list(Chunk.objects.filter(source=source).values_list("text", flat=True))
    assert len(texts) == 10 and max(len(t) for t in texts) == 500
    source.refresh_from_db()
    assert source.chunk_count == 10
