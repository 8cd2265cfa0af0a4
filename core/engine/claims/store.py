"""The claim store a strategy reads (EngineContext.claims): the product's is PostgreSQL
(sources.claim_store.PgClaimStore), the benchmark's and the tests' is in memory
(core.engine.claims.memory_store.MemoryClaimStore)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.engine.claims.types import ClaimRecord
from core.engine.types import Vector


@dataclass(frozen=True)
class KeyMatch:
    """A (subject, attribute) the question may be about, and how well it matches (higher is better)."""

    subject: str
    attribute: str
    score: float


class ClaimStore(Protocol):
    def match_keys(self, question: str, question_vector: Vector, limit: int) -> list[KeyMatch]:
        """The items a question is most likely about: subjects named in the question first,
        then embedding similarity between the question and "subject attribute" keys."""
        ...

    def group(self, subject: str, attribute: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        """The homologous group: every claim on (subject, attribute), optionally of some sources only."""
        ...

    def about(self, subject: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        """Every claim whose subject is ``subject`` (the line graph's neighbours of a claim)."""
        ...


LEXICAL_WEIGHT = 0.5  # how much a word shared with the question outweighs embedding similarity
_PREFIX = 5  # words agree when their first letters agree: "arrive"/"arrival", "depart"/"departure"


def _prefixes(text: str) -> set[str]:
    from core.engine.lexical import content_words

    return {w[:_PREFIX] for w in content_words(text)}


def attribute_fit(question: str, attribute: str, cosine: float) -> float:
    """How well an attribute name fits a question: the embedding cosine plus LEXICAL_WEIGHT
    times the share of the attribute's words the question uses (compared on their first
    five letters, so "scheduled to arrive" fits "scheduled arrival time" better than
    "actual arrival time", which a small sentence embedder alone often gets backwards)."""
    words = _prefixes(attribute)
    if not words:
        return cosine
    shared = len(words & _prefixes(question)) / len(words)
    return cosine + LEXICAL_WEIGHT * shared
