"""An in-memory claim store (the benchmark's and the tests'), on the ClaimStore protocol.

Matching a question to items, best first:

1. subjects the question names (case folded, on word boundaries; an ISBN-like digit run in the
   question also matches a subject with the same ``normalize_isbn``): each of the subject's
   attributes scores NAMED_SUBJECT_SCORE + max(0, store.attribute_fit(question, attribute)),
   so a named subject always outranks the rest and its attributes rank by how well they fit
   the question (embedding cosine plus shared words);
2. every other (subject, attribute): cosine(question, "subject attribute"), below 1.

Key texts and attribute names are embedded lazily, once, on the first question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from core.engine.claims.normalize import normalize_isbn
from core.engine.claims.store import KeyMatch, attribute_fit
from core.engine.claims.types import ClaimRecord
from core.engine.types import Embedder, Vector

NAMED_SUBJECT_SCORE = 1.0  # scores at or above this mean the question names the item's subject
_ISBN_RUN = re.compile(r"(?<![0-9A-Za-z])(?:97[89][- ]?)?(?:[0-9][- ]?){8,9}[0-9Xx](?![0-9A-Za-z])")


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _isbn_key(text: str) -> str | None:
    """The ISBN-10 a text stands for when it is one (10 characters after normalize_isbn)."""
    if sum(ch.isdigit() for ch in text) < 9:
        return None
    isbn = normalize_isbn(text)
    return isbn if isbn is not None and len(isbn) == 10 else None


def names_subject(question: str, subject: str) -> bool:
    """``subject`` occurs in ``question`` (both folded) with no letter or digit either side."""
    start = question.find(subject)
    while subject and start >= 0:
        end = start + len(subject)
        before = question[start - 1] if start > 0 else " "
        after = question[end] if end < len(question) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = question.find(subject, start + 1)
    return False


class MemoryClaimStore:
    def __init__(self, claims: Sequence[ClaimRecord], embedder: Embedder) -> None:
        self.claims = list(claims)
        self.embedder = embedder
        self._items: dict[tuple[str, str], list[ClaimRecord]] = {}
        self._subjects: dict[str, list[ClaimRecord]] = {}
        self._attributes_of: dict[str, list[str]] = {}
        for claim in self.claims:
            self._items.setdefault((claim.subject, claim.attribute), []).append(claim)
            self._subjects.setdefault(claim.subject, []).append(claim)
        for subject, attribute in self._items:
            self._attributes_of.setdefault(subject, []).append(attribute)
        self._folded = [(_fold(s), s) for s in self._subjects]
        self._isbns: dict[str, list[str]] = {}
        for subject in self._subjects:
            isbn = _isbn_key(subject)
            if isbn is not None:
                self._isbns.setdefault(isbn, []).append(subject)
        self._keys = list(self._items)
        self._key_vectors: np.ndarray | None = None
        self._attribute_vectors: dict[str, np.ndarray] | None = None

    # --- the protocol ----------------------------------------------------------------------

    def match_keys(self, question: str, question_vector: Vector, limit: int) -> list[KeyMatch]:
        if limit <= 0 or not self._keys:
            return []
        q = np.asarray(question_vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        named = self.named_subjects(question)
        out: list[KeyMatch] = []
        if named:
            vectors = self._attribute_index()
            for subject in named:
                for attribute in self._attributes_of[subject]:
                    fit = attribute_fit(question, attribute, float(vectors[attribute] @ q))
                    out.append(KeyMatch(subject, attribute, NAMED_SUBJECT_SCORE + max(0.0, fit)))
        if len(out) < limit:  # only then can a key of an unnamed subject make the cut
            cosines = self._key_index() @ q
            named_set = set(named)
            unnamed = 0
            for i in np.argsort(-cosines, kind="stable").tolist():
                subject, attribute = self._keys[i]
                if subject in named_set:
                    continue
                out.append(KeyMatch(subject, attribute, min(float(cosines[i]), NAMED_SUBJECT_SCORE - 1e-6)))
                unnamed += 1
                if unnamed >= limit:
                    break
        out.sort(key=lambda m: (-m.score, m.subject, m.attribute))
        return out[:limit]

    def group(self, subject: str, attribute: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        return self._only(self._items.get((subject, attribute), []), source_ids)

    def about(self, subject: str, source_ids: Sequence[int] | None = None) -> list[ClaimRecord]:
        return self._only(self._subjects.get(subject, []), source_ids)

    # --- helpers ---------------------------------------------------------------------------

    def named_subjects(self, question: str) -> list[str]:
        """Subjects the question names, longest first (a subject's text, or its ISBN)."""
        folded = _fold(question)
        found = {subject for key, subject in self._folded if names_subject(folded, key)}
        for run in _ISBN_RUN.findall(question):
            isbn = _isbn_key(run)
            if isbn is not None:
                found.update(self._isbns.get(isbn, []))
        return sorted(found, key=lambda s: (-len(s), s))

    @staticmethod
    def _only(claims: list[ClaimRecord], source_ids: Sequence[int] | None) -> list[ClaimRecord]:
        if source_ids is None:
            return list(claims)
        wanted = set(source_ids)
        return [c for c in claims if c.source_id in wanted]

    def _key_index(self) -> np.ndarray:
        if self._key_vectors is None:
            self._key_vectors = np.asarray(self.embedder.encode([f"{s} {a}" for s, a in self._keys]), dtype=np.float32)
        return self._key_vectors

    def _attribute_index(self) -> dict[str, np.ndarray]:
        if self._attribute_vectors is None:
            names = list(dict.fromkeys(a for _, a in self._keys))
            vectors = np.asarray(self.embedder.encode(names), dtype=np.float32)
            self._attribute_vectors = dict(zip(names, vectors, strict=True))
        return self._attribute_vectors
