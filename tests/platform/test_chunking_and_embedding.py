"""Sentence-aware chunking, and embedding through the real offline MiniLM model."""

from __future__ import annotations

import numpy as np
import pytest

from core.engine.chunking import chunk_text, split_sentences
from tests.platform.helpers import SENTENCES, TEXT


def words(text: str) -> list[str]:
    return text.split()


def test_every_window_stays_within_the_word_budget():
    for size, overlap in [(12, 0), (20, 5), (30, 10), (200, 20)]:
        chunks = chunk_text(TEXT, size, overlap)
        assert chunks, (size, overlap)
        assert all(len(words(c.text)) <= size for c in chunks)
        assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_windows_hold_whole_sentences():
    for chunk in chunk_text(TEXT, 30, 10):
        assert any(chunk.text.startswith(s) for s in SENTENCES)
        assert any(chunk.text.endswith(s) for s in SENTENCES)


def test_the_overlap_carries_whole_trailing_sentences_into_the_next_window():
    chunks = chunk_text(TEXT, 30, 15)
    assert len(chunks) > 2
    for previous, current in zip(chunks, chunks[1:], strict=False):
        carried = [s for s in SENTENCES if s in previous.text and s in current.text]
        assert carried, "consecutive windows share at least one sentence"
        assert sum(len(words(s)) for s in carried) <= 15
        assert current.text.startswith(carried[0]) and previous.text.endswith(carried[-1])


def test_no_overlap_means_every_sentence_appears_exactly_once():
    chunks = chunk_text(TEXT, 25, 0)
    for sentence in SENTENCES:
        assert sum(sentence in c.text for c in chunks) == 1


def test_a_sentence_longer_than_the_window_is_split_into_word_windows():
    long_sentence = " ".join(f"w{i}" for i in range(50)) + "."
    chunks = chunk_text("Short start. " + long_sentence + " Short end.", 20, 5)
    assert all(len(words(c.text)) <= 20 for c in chunks)
    covered = set(" ".join(c.text for c in chunks).split())
    assert {f"w{i}" for i in range(49)} | {"w49."} <= covered


def test_every_word_of_the_input_appears_in_some_chunk():
    text = (
        'He said "Stop." Then he left. (See the appendix.) Prices rose 3.5% in 2023! Did they? '
        "Yes [citation needed]. 'Quoted.' Next paragraph follows.\n\nA new paragraph starts here; "
        + " ".join(f"token{i}" for i in range(300))
        + ". The end."
    )
    for size, overlap in [(8, 0), (16, 4), (50, 10), (120, 20)]:
        chunked = set(" ".join(c.text for c in chunk_text(text, size, overlap)).split())
        missing = [w for w in text.split() if w not in chunked]
        assert missing == [], (size, overlap)


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert split_sentences('He said "Stop." Then he left. (See above.) Next one.') == [
        'He said "Stop."',
        "Then he left.",
        "(See above.)",
        "Next one.",
    ]


def test_blank_lines_end_a_sentence():
    assert split_sentences("A heading without a stop\n\nThe body follows") == [
        "A heading without a stop",
        "The body follows",
    ]


@pytest.mark.parametrize("size, overlap", [(0, 0), (-5, 0), (10, 10), (10, 11), (10, -1)])
def test_an_invalid_size_or_overlap_is_refused(size, overlap):
    with pytest.raises(ValueError):
        chunk_text(TEXT, size, overlap)


def test_empty_text_gives_no_chunks():
    assert chunk_text("   \n ", 20, 5) == []


# --- the real offline model -----------------------------------------------------------------


def test_the_offline_model_gives_unit_norm_384_dimensional_vectors(embedder):
    vectors = embedder.encode(["The cat sat on the mat.", "Stock markets fell sharply.", "x"])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.dimension == 384


def test_paraphrases_are_closer_than_unrelated_sentences(embedder):
    pairs = [
        ("The Eiffel Tower is in Paris.", "Paris is where the Eiffel Tower stands.", "Bananas are rich in potassium."),
        ("How tall is Mount Everest?", "What is the height of Everest?", "The train leaves at seven."),
        (
            "The company reported record profits.",
            "The firm announced its highest earnings ever.",
            "My dog likes to swim.",
        ),
    ]
    for anchor, paraphrase, unrelated in pairs:
        a, p, u = embedder.encode([anchor, paraphrase, unrelated])
        assert float(a @ p) > float(a @ u) + 0.2, (anchor, float(a @ p), float(a @ u))


def test_encoding_is_deterministic_and_independent_of_the_batch(embedder):
    texts = [f"Sentence number {i} about rivers and lakes." for i in range(10)]
    together = embedder.encode(texts, batch_size=4)
    alone = np.vstack([embedder.encode([t]) for t in texts[:3]])
    np.testing.assert_allclose(together[:3], alone, atol=1e-5)
