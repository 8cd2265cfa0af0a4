"""Responses a new run need not generate again (issue 38 row 10): a (query, source) response
depends on the generator, its answer prompt, the retrieval and filter parameters (k, tau), the embedding model,
the question's text and the source's documents. Each stored response carries the digest of
those inputs (``RunResponse.inputs``); when a run starts, every pair whose inputs digest
matches a response stored by an earlier run gets a copy of it instead of a generation, and the
run says how many it reused. A source whose documents changed (one added, deleted or
re-ingested) has a new digest, so its pairs are generated again."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable

from django.conf import settings

from core.engine.backends.generation.prompts import ANSWER_HEAD, SYSTEM
from core.models import EstimationRun, FactQuery, RunResponse
from sources.models import Document

FIELDS = ("raw_response", "response", "is_idk", "filtered", "align_score", "chunk_ids")


def source_digests(source_ids: Iterable[int]) -> dict[int, str]:
    """Per source: a digest of its documents (their content hashes, sorted) and the embedding model."""
    hashes: dict[int, list[str]] = defaultdict(list)
    ids = sorted(set(source_ids))
    for source_id, content in Document.objects.filter(source_id__in=ids).values_list("source_id", "content_hash"):
        hashes[source_id].append(content)
    model = str(getattr(settings, "EMBEDDING_MODEL", ""))
    out = {}
    for source_id in ids:
        digest = hashlib.sha256(model.encode())
        for content in sorted(hashes[source_id]):
            digest.update(content.encode())
        out[source_id] = digest.hexdigest()
    return out


def inputs_digest(run: EstimationRun, question: str, source_digest: str) -> str:
    """The digest of everything one response of ``run`` depends on (the answer prompt's
    system text and head included: a change to them makes every response new)."""
    prompt = hashlib.sha256(f"{SYSTEM}\x1f{ANSWER_HEAD}".encode()).hexdigest()
    # The relevance rule and the grounding of a local model's answers change responses too
    # (issue 36): responses made under other settings, or before them, are not reused (v3: the
    # relevance floor and the passage wording of answers; v4: abstentions read again and a
    # source's answer held to what most of its passages say).
    rules = f"min_relevance={run.params.get('min_relevance')};grounding={settings.ANSWER_GROUNDING};v4"
    parts = [run.backend, prompt, str(run.params.get("k")), str(run.params.get("tau")), rules, question, source_digest]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def pair_digests(run: EstimationRun, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The inputs digest of each (query id, source id) pair of the run."""
    wanted = list(pairs)
    questions = dict(
        FactQuery.objects.filter(pk__in={q for q, _ in wanted}, query_set_id=run.query_set_id).values_list(
            "id", "question"
        )
    )
    sources = source_digests(s for _, s in wanted)
    return {(q, s): inputs_digest(run, questions[q], sources[s]) for q, s in wanted if q in questions}


def reuse_responses(run: EstimationRun, pairs: Iterable[tuple[int, int]]) -> int:
    """Copy into ``run`` the latest response an earlier run stored with the same inputs, for
    each of ``pairs`` that has one; returns how many were copied."""
    digests = pair_digests(run, pairs)
    if not digests or not run.backend:
        return 0
    earlier = (
        RunResponse.objects.filter(inputs__in=set(digests.values()))
        .exclude(run=run)
        .order_by("inputs", "-created_at", "-id")
        .distinct("inputs")
        .values("inputs", *FIELDS)
    )
    by_digest = {row["inputs"]: row for row in earlier}
    copies = [
        RunResponse(run=run, query_id=q, source_id=s, inputs=digest, **{f: by_digest[digest][f] for f in FIELDS})
        for (q, s), digest in digests.items()
        if digest in by_digest
    ]
    return len(RunResponse.objects.bulk_create(copies, ignore_conflicts=True))
