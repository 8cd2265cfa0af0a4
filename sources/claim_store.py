"""The product's claim store (core.engine.claims.store.ClaimStore) over PostgreSQL + pgvector.

Matching a question to the items it is about (``match_keys``) works in two steps:

1. subjects named in the question: every candidate span of it (word n-grams of up to six
   words, raw and casefolded, trailing punctuation and a possessive "'s" dropped, and
   ISBN-like digit runs through normalize_isbn) is looked up in one ``subject IN (...)``
   query over the (subject, attribute) index. A matched subject's attributes are ranked by
   how well their names fit the question (core.engine.claims.store.attribute_fit: cosine
   plus shared words), scored 1 + fit, so they come before any match by embedding alone;
2. the question's embedding against the embeddings of "subject attribute" keys (ClaimKey,
   HNSW cosine index), scored by cosine similarity.

Keys are embedded when a feature needs them: the ``tasks.embed_claim_keys`` job after a
claim load embeds all of them, and each question embeds at most CLAIM_KEYS_EMBED_ON_DEMAND
missing keys itself, so a small claim set works before that job has run. Only claims of
active sources are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from django.conf import settings
from django.db.models import Exists, OuterRef
from pgvector.django import CosineDistance

from core.engine.claims.normalize import normalize_isbn
from core.engine.claims.store import KeyMatch, attribute_fit
from core.engine.claims.types import ClaimRecord
from core.engine.types import Embedder, JSONObject, Vector
from runtime.backends import configured_embedder
from runtime.locks import claim
from sources.models import Claim, ClaimKey

MAX_SPAN_WORDS = 6
MAX_QUESTION_TOKENS = 64
EMBED_BATCH = 512
EMBED_CLAIM = "rrag:embed-claim-keys"  # advisory lock name: one claim-key embedding job at a time
_EDGE_PUNCTUATION = ".,;:!?\"'`()[]{}<>«»“”‘’"
_ISBN_RUN = re.compile(r"(?<![0-9A-Za-z])(?:\d[\d\- ]{7,20}[\dXx])(?![0-9A-Za-z])")
_ATTRIBUTE_VECTORS: dict[tuple[str, str], Vector] = {}
_ATTRIBUTE_CACHE_SIZE = 10_000


def key_text(subject: str, attribute: str) -> str:
    """What a (subject, attribute) key is embedded as."""
    return f"{subject} {attribute}"


def question_spans(question: str) -> set[str]:
    """Candidate subject names in a question: word n-grams (up to MAX_SPAN_WORDS words) raw
    and casefolded, each token without surrounding punctuation or a possessive "'s", and
    ISBN-like digit runs as ISBN-10."""
    tokens = []
    for raw in question.split()[:MAX_QUESTION_TOKENS]:
        token = raw.strip(_EDGE_PUNCTUATION)
        for suffix in ("'s", "’s"):
            if token.endswith(suffix) and len(token) > len(suffix):
                token = token[: -len(suffix)]
        if token:
            tokens.append(token)
    spans: set[str] = set()
    for start in range(len(tokens)):
        for end in range(start + 1, min(len(tokens), start + MAX_SPAN_WORDS) + 1):
            span = " ".join(tokens[start:end])
            spans.update((span, span.casefold()))
    for run in _ISBN_RUN.findall(question):
        digits = re.sub(r"[^0-9Xx]", "", run)
        if len(digits) in (10, 13):
            spans.add(digits)
            isbn = normalize_isbn(digits)
            if isbn:
                spans.add(isbn)
    return spans


def _missing_keys(limit: int) -> list[tuple[str, str]]:
    """(subject, attribute) keys of stored claims that have no embedding yet."""
    has_key = ClaimKey.objects.filter(subject=OuterRef("subject"), attribute=OuterRef("attribute"))
    rows = (
        Claim.objects.filter(~Exists(has_key))
        .values_list("subject", "attribute")
        .distinct()
        .order_by("subject", "attribute")[:limit]
    )
    return list(rows)


def embed_claim_keys(
    embedder: Embedder | None = None,
    *,
    limit: int | None = None,
    batch: int = EMBED_BATCH,
    on_batch: Callable[[int, int], None] | None = None,
    exclusive: bool = False,
) -> JSONObject:
    """Embed the keys that have none, ``batch`` at a time (each batch commits on its own, so
    a long run keeps what it did); at most ``limit`` keys (None: all). ``on_batch(done,
    total)`` is called after each batch (a job's progress and heartbeat).

    ``exclusive`` (the embedding job): one such run at a time across workers. Two claim
    loads used to start two jobs that embedded the same keys in lockstep (about 90 minutes
    each at 800k keys); the second now ends at once, and the first, which looks for missing
    keys until there are none, embeds the second load's keys too."""
    if exclusive:
        with claim(EMBED_CLAIM) as held:
            if not held:
                return {"keys": 0, "skipped": "another job is embedding the claim keys; it embeds these too"}
            return embed_claim_keys(embedder, limit=limit, batch=batch, on_batch=on_batch)
    embedder = embedder or configured_embedder()
    total: int | None = None
    if on_batch is not None:
        has_key = ClaimKey.objects.filter(subject=OuterRef("subject"), attribute=OuterRef("attribute"))
        total = Claim.objects.filter(~Exists(has_key)).values("subject", "attribute").distinct().count()
        if limit is not None:
            total = min(total, limit)
    done = 0
    previous: list[tuple[str, str]] = []
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        keys = _missing_keys(size)
        if not keys or keys == previous:  # nothing left, or rows this process cannot insert
            break
        previous = keys
        texts = [key_text(s, a) for s, a in keys]
        vectors = embedder.encode(texts, batch_size=settings.EMBEDDING_BATCH_SIZE)
        ClaimKey.objects.bulk_create(
            [
                ClaimKey(subject=s, attribute=a, text=text, embedding=vector)
                for (s, a), text, vector in zip(keys, texts, vectors, strict=True)
            ],
            ignore_conflicts=True,
        )
        done += len(keys)
        if on_batch is not None:
            on_batch(done, max(total or 0, done))
    return {"keys": done, "model": embedder.name}


def _records(rows: Iterable[tuple[int, int, str, str, str, str, str, str]]) -> list[ClaimRecord]:
    return [
        ClaimRecord(
            id=pk,
            source_id=source_id,
            subject=subject,
            attribute=attribute,
            value=value,
            raw_value=raw_value,
            normalizer=normalizer,
            tolerance=tolerance,
        )
        for pk, source_id, subject, attribute, value, raw_value, normalizer, tolerance in rows
    ]


_RECORD_FIELDS = ("id", "source_id", "subject", "attribute", "value", "raw_value", "normalizer", "tolerance")


class PgClaimStore:
    """ClaimStore over sources.Claim / sources.ClaimKey (claims of active sources only)."""

    def __init__(self, embedder: Embedder | None = None, *, embed_on_demand: int | None = None) -> None:
        self._embedder = embedder
        self.embed_on_demand = settings.CLAIM_KEYS_EMBED_ON_DEMAND if embed_on_demand is None else embed_on_demand

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = configured_embedder()
        return self._embedder

    # -- matching ------------------------------------------------------------------------

    def _attribute_vectors(self, attributes: Sequence[str]) -> dict[str, Vector]:
        name = self.embedder.name
        missing = [a for a in attributes if (name, a) not in _ATTRIBUTE_VECTORS]
        if missing:
            if len(_ATTRIBUTE_VECTORS) + len(missing) > _ATTRIBUTE_CACHE_SIZE:
                _ATTRIBUTE_VECTORS.clear()
            for attribute, vector in zip(missing, self.embedder.encode(missing), strict=True):
                _ATTRIBUTE_VECTORS[(name, attribute)] = vector
        return {a: _ATTRIBUTE_VECTORS[(name, a)] for a in attributes}

    def subject_matches(self, question: str, question_vector: Vector) -> list[KeyMatch]:
        """Keys of subjects named in the question, scored 1 + attribute_fit(question, attribute name)."""
        spans = question_spans(question)
        if not spans:
            return []
        pairs = list(
            Claim.objects.filter(subject__in=sorted(spans), source__active=True)
            .values_list("subject", "attribute")
            .distinct()
            .order_by("subject", "attribute")
        )
        if not pairs:
            return []
        vectors = self._attribute_vectors(sorted({a for _, a in pairs}))
        q = np.asarray(question_vector, dtype=np.float32).ravel()
        return [
            KeyMatch(s, a, 1.0 + max(0.0, attribute_fit(question, a, float(np.dot(q, vectors[a]))))) for s, a in pairs
        ]

    def vector_matches(self, question_vector: Vector, limit: int) -> list[KeyMatch]:
        """The keys nearest the question by embedding (cosine), among keys with claims of active sources."""
        if self.embed_on_demand > 0:
            embed_claim_keys(self.embedder, limit=self.embed_on_demand)
        vector = np.asarray(question_vector, dtype=np.float32).ravel()
        active = Claim.objects.filter(subject=OuterRef("subject"), attribute=OuterRef("attribute"), source__active=True)
        rows = (
            ClaimKey.objects.annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("subject", "attribute", "distance")[: max(limit * 3, limit + 10)]
        )
        candidates = list(rows)
        if not candidates:
            return []
        keep = set(
            ClaimKey.objects.filter(
                Exists(active), subject__in={s for s, _, _ in candidates}, attribute__in={a for _, a, _ in candidates}
            ).values_list("subject", "attribute")
        )
        return [KeyMatch(s, a, 1.0 - float(d)) for s, a, d in candidates if (s, a) in keep][:limit]

    def match_keys(self, question: str, question_vector: Vector, limit: int) -> list[KeyMatch]:
        """Subjects named in the question first (1 + attribute cosine), then embedding matches."""
        if limit <= 0:
            return []
        best: dict[tuple[str, str], KeyMatch] = {}
        for match in [*self.subject_matches(question, question_vector), *self.vector_matches(question_vector, limit)]:
            key = (match.subject, match.attribute)
            if key not in best or match.score > best[key].score:
                best[key] = match
        ranked = sorted(best.values(), key=lambda m: (-m.score, m.subject, m.attribute))
        return ranked[:limit]

    # -- reading groups ------------------------------------------------------------------

    def group(self, subject: str, attribute: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        """Every claim on (subject, attribute) of active sources (of ``source_ids`` when given)."""
        rows = Claim.objects.filter(subject=subject, attribute=attribute, source__active=True)
        if source_ids is not None:
            rows = rows.filter(source_id__in=list(source_ids))
        return _records(rows.order_by("source_id", "id").values_list(*_RECORD_FIELDS))

    def about(self, subject: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        """Every claim whose subject is ``subject``, of active sources (of ``source_ids`` when given)."""
        rows = Claim.objects.filter(subject=subject, source__active=True)
        if source_ids is not None:
            rows = rows.filter(source_id__in=list(source_ids))
        return _records(rows.order_by("attribute", "source_id", "id").values_list(*_RECORD_FIELDS))
