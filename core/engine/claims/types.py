"""The claim as the engine sees it: one source's value for one (subject, attribute)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_SUBJECT_CHARS = 500
MAX_ATTRIBUTE_CHARS = 200
MAX_VALUE_CHARS = 2000


@dataclass(frozen=True)
class ExtractedClaim:
    """A claim read from a record or a text, before it is stored.

    ``source`` names the source when the record says which one it comes from (a multi-source
    file such as Flights); None means the source the file was uploaded for."""

    subject: str
    attribute: str
    value: str  # normalised
    raw_value: str
    source: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    method: str = "mapping"  # "mapping" (structured) or "model" (extracted from text by an LLM)

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.source, self.subject, self.attribute)


@dataclass(frozen=True)
class ClaimRecord:
    """A stored claim, as estimation and MultiRAG read it (ids are the product's)."""

    id: int
    source_id: int
    subject: str
    attribute: str
    value: str
    raw_value: str = ""
    normalizer: str = "raw"


def dedupe_first(claims: list[ExtractedClaim]) -> list[ExtractedClaim]:
    """One claim per (source, subject, attribute): the first a file gives (a source that
    repeats an item within one file is counted once, as the truth-discovery benchmark does)."""
    seen: set[tuple[str | None, str, str]] = set()
    out: list[ExtractedClaim] = []
    for claim in claims:
        if claim.key in seen:
            continue
        seen.add(claim.key)
        out.append(claim)
    return out
