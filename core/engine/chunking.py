"""Sentence-aware chunking: windows of whole sentences up to a word budget, with overlap."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? (optionally followed by quotes/brackets) before whitespace and an
# upper-case letter, digit or quote; or at a blank line. Abbreviations like "e.g." rarely
# precede a capital, and a wrong split only moves a window boundary.
# Closing quotes/brackets after the stop sit inside the lookbehind, so the split consumes
# only whitespace and they stay with their sentence.
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]])|(?<=[.!?][\"'”’)\]]{2}))\s+(?=[\"'“‘(\[]?[A-Z0-9])|\n\s*\n"
)


@dataclass(frozen=True)
class TextChunk:
    ordinal: int
    text: str


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def _split_long(sentence: str, size: int) -> list[str]:
    words = sentence.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def chunk_text(text: str, size: int = 120, overlap: int = 20) -> list[TextChunk]:
    """Pack whole sentences into windows of at most `size` words.

    Consecutive windows share trailing sentences worth at most `overlap` words, so an
    answer that straddles a boundary is still retrievable. A sentence longer than `size`
    is cut into word windows of its own.
    """
    if size < 1:
        raise ValueError("chunk size must be positive")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be >= 0 and smaller than the chunk size")
    sentences: list[str] = []
    for sentence in split_sentences(text):
        sentences.extend(_split_long(sentence, size) if len(sentence.split()) > size else [sentence])

    chunks: list[str] = []
    window: list[str] = []
    words = 0
    for sentence in sentences:
        n = len(sentence.split())
        if window and words + n > size:
            chunks.append(" ".join(window))
            carried: list[str] = []
            carried_words = 0
            for previous in reversed(window):
                m = len(previous.split())
                if carried_words + m > overlap or carried_words + m + n > size:
                    break
                carried.insert(0, previous)
                carried_words += m
            window, words = carried, carried_words
        window.append(sentence)
        words += n
    if window:
        chunks.append(" ".join(window))
    return [TextChunk(ordinal=i, text=t) for i, t in enumerate(chunks)]
