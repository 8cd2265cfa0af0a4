"""The claim as the engine sees it: one source's value for one (subject, attribute)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.engine.types import JSONObject

MAX_SUBJECT_CHARS = 500
MAX_ATTRIBUTE_CHARS = 200
MAX_VALUE_CHARS = 2000
# Bytes of UTF-8 as well as characters: subject and attribute are keys of unique btree indexes
# (a claim per source, a claim key, a resolution per run), whose rows hold at most 2704 bytes.
# 500 characters of a 3- or 4-byte script are up to 2000 bytes, and with the attribute they
# overflowed it (a 500, or a claims job failing after its 202); 1500 + 600 bytes and the ids
# always fit. Text in 1- or 2-byte scripts meets the character bound first.
MAX_SUBJECT_BYTES = 1500
MAX_ATTRIBUTE_BYTES = 600


def too_long(text: str, chars: int, utf8_bytes: int) -> str | None:
    """Why ``text`` is too long to store (the bound it passes, named), or None."""
    if len(text) > chars:
        return f"longer than {chars} characters"
    if len(text.encode("utf-8", "surrogatepass")) > utf8_bytes:
        return f"longer than {utf8_bytes} bytes of UTF-8 (the limit for a key)"
    return None


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
    provenance: JSONObject = field(default_factory=dict)
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
    tolerance: str = ""  # the mapping's tolerance for the attribute (core.engine.claims.tolerance)


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
