"""The claim store a strategy reads (EngineContext.claims): the product's is PostgreSQL
(sources.claim_store.PgClaimStore), the benchmark's and the tests' is in memory
(core.engine.claims.memory_store.MemoryClaimStore, when written)."""

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
