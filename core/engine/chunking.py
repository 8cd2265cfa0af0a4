"""Sentence-aware chunking: windows of whole sentences up to a word budget, with overlap,
and never more than a character budget."""

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


_WHITESPACE = re.compile(r"\s")
DEFAULT_MAX_CHARS = 2000


@dataclass(frozen=True)
class TextChunk:
    ordinal: int
    text: str


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def _split_long(sentence: str, size: int) -> list[str]:
    words = sentence.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def split_chars(text: str, max_chars: int) -> list[str]:
    """`text` in pieces of at most `max_chars` characters, each cut at the last whitespace
    that keeps it within the bound, or mid-word (between two characters) where a single
    "word" is longer than that (a text without spaces)."""
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > max_chars:
        cut = 0
        for match in _WHITESPACE.finditer(rest, 1, max_chars + 1):
            cut = match.start()
        if cut == 0:
            cut = max_chars
        piece, rest = rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece:
            pieces.append(piece)
    if rest:
        pieces.append(rest)
    return pieces


def chunk_text(text: str, size: int = 120, overlap: int = 20, max_chars: int = DEFAULT_MAX_CHARS) -> list[TextChunk]:
    """Pack whole sentences into windows of at most `size` words and `max_chars` characters.

    Consecutive windows share trailing sentences worth at most `overlap` words, so an
    answer that straddles a boundary is still retrievable. A sentence longer than `size`
    is cut into word windows of its own; a window longer than `max_chars` characters (long
    words, or one "word" of two million characters) is cut into pieces within the bound.
    """
    if size < 1:
        raise ValueError("chunk size must be positive")
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
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
    bounded = [
        piece for chunk in chunks for piece in (split_chars(chunk, max_chars) if len(chunk) > max_chars else [chunk])
    ]
    return [TextChunk(ordinal=i, text=t) for i, t in enumerate(bounded)]
