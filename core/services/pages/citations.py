"""An answer's citations: the passages it rests on, numbered, each with the sentence to
highlight (the ask page's panel and a question's page)."""

from __future__ import annotations

from typing import Any

from core.engine.strategies.base import NO_CHUNK
from core.models import Question, Vote
from core.services.explain import highlight
from sources.models import Chunk

MAX_CITATIONS = 8


def citations(question: Question, votes: list[Vote], chosen: int | None) -> list[dict[str, Any]]:
    """The passages the answer rests on, numbered: those read by the sources of the winning
    cluster ``chosen`` or, for strategies without per-source votes, the evidence marked used.
    Each carries the sentence to highlight (core.services.explain.highlight). One query at most."""
    passages: dict[int, dict[str, Any]] = {}
    for vote in votes:
        if chosen is None or vote.cluster != chosen or vote.filtered:
            continue
        for p in vote.passages or []:
            if p.get("chunk_id") and p["chunk_id"] not in passages:
                passages[p["chunk_id"]] = {**p, "source_name": vote.source.name}
    if not passages:
        passages = _used_evidence(question)
    marked = [(p, highlight(p.get("text", ""), question.answer)) for p in passages.values()]
    # Cite the passages with a sentence to mark (they share words with the answer); the others
    # were read but do not support it (retrieval also returns passages about other things).
    supporting = [(p, mark) for p, mark in marked if mark.sentence] or marked
    return [{**p, "n": n, "mark": mark} for n, (p, mark) in enumerate(supporting[:MAX_CITATIONS], start=1)]


def _used_evidence(question: Question) -> dict[int, dict[str, Any]]:
    """The passages of the question's evidence that its strategy marked used (not claims)."""
    used = [
        e["chunk_id"]
        for e in question.evidence or []
        if e.get("used") and e.get("chunk_id", NO_CHUNK) != NO_CHUNK and e.get("claim_id") is None
    ]
    chunks = Chunk.objects.filter(pk__in=used[: MAX_CITATIONS * 2]).select_related("document", "source")
    by_id = {c.pk: c for c in chunks}
    passages: dict[int, dict[str, Any]] = {}
    for cid in used:
        chunk = by_id.get(cid)
        if chunk is not None and cid not in passages:
            passages[cid] = {
                "chunk_id": cid,
                "document_id": chunk.document_id,
                "title": chunk.document.title,
                "url": chunk.document.url,
                "text": chunk.text,
                "source_name": chunk.source.name,
            }
    return passages
