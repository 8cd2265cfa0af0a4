"""Per-document credibility without labels: CrEst (Adila et al., 2025) by the triplet method.

CrEst treats each retrieved document as a noisy "labeler" of an unobserved true document
y and estimates how far each one lies from y from their pairwise agreement alone (weak
supervision). Two closed forms of the triplet method live here:

- :func:`triplet_accuracies`, Fu et al. (2020) for +-1 labelers with conditionally
  independent errors: E[l_i l_j] = a_i a_j, so a_i = sqrt(|E[l_i l_j] E[l_i l_k] / E[l_j l_k]|).
- :func:`triplet_errors`, the form CrEst uses (paper Eq. 3-4 and Appendix B, after Shin et
  al. 2021): with independent errors, E[d(i, j)] = E[d(i, y)] + E[d(j, y)] for the squared
  Euclidean distance d, so E[d(i, y)] = (d_ij + d_ik - d_jk) / 2.

A document's credibility (paper Eq. 2) is theta_i = 1 / E[d(i, y)]: the closer it is to
the true document, and so to the other documents, the more credible. E[d(i, y)] is the
mean of the triplet estimates over every pair (j, k) of other documents (the paper's
"expectation"; averaging all triplets is what makes a single query's small set usable).

Ensemble (paper section 2.2-2.3): each embedder gives its own scores; each set is
standardised to [0, 1] by dividing by its largest score (see :func:`standardise` for why
not min-max) and the sets are averaged.

Degenerate cases, all documented fallbacks (:class:`CredibilityEstimate.fallback` says
which happened):

- fewer than 3 documents: no triplet exists; every document gets credibility 1.0 (no
  evidence against any of them, so none is down-weighted);
- identical documents (every pairwise distance ~0): every document gets 1.0;
- a non-positive or tiny E[d(i, y)] (sampling noise, near-duplicates): floored at
  FLOOR_FRACTION of the set's mean error level, so one near-duplicate pair cannot send
  theta to infinity and squash every other score to 0;
- Fu's form with a near-zero denominator E[l_j l_k]: that triplet is skipped; a document
  with no usable triplet gets the mean of the others (neutral).

Pure numpy on given vectors; the embedders are passed in (core.engine.types.Embedder).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from core.engine.lexical import content_words
from core.engine.types import Embedder

Array = npt.NDArray[np.float64]
Method = Literal["distance", "agreement"]
Label = Literal["low", "medium", "high"]
METHODS: tuple[Method, ...] = ("distance", "agreement")

# E[d(i, y)] is floored at this share of the set's mean error level (half the mean pairwise
# distance, the error every document would have if all were equally credible): theta is
# then at most 10x the credibility of an average document.
FLOOR_FRACTION = 0.1
# Squared distances between unit vectors lie in [0, 4]; below this every document is the same.
IDENTICAL_DISTANCE = 1e-6
# Fu's triplet divides by an agreement moment; smaller than this it is too ill-conditioned.
MIN_DENOMINATOR = 1e-3

# Label cut points on the standardised score (a ratio to the most credible document's
# theta). Fixed cut points, not terciles: terciles would call a third of any set "low",
# even a set where every document agrees, and a third "high" even in a poisoned set.
# With theta = 1/E[d(i, y)]: "high" = estimated error within 1.5x the most credible
# document's, "low" = more than 3x.
HIGH_CUT = 2.0 / 3.0
LOW_CUT = 1.0 / 3.0

FEWER_THAN_THREE = "fewer than 3 documents: no triplet, every document counted as fully credible"
IDENTICAL = "the documents are identical in embedding space: every document counted as fully credible"


def triplet_accuracies(
    m_ij: float, m_ik: float, m_jk: float, *, min_denominator: float = MIN_DENOMINATOR
) -> tuple[float, float, float] | None:
    """Fu et al.'s triplet: accuracies (a_i, a_j, a_k) from the agreement moments
    E[l_i l_j], E[l_i l_k], E[l_j l_k] of three +-1 labelers with independent errors.

    None when a denominator is below ``min_denominator`` (the triplet cannot be solved
    stably). Accuracies are capped at 1 (sampling noise can push the ratio above)."""
    moments = (m_ij, m_ik, m_jk)
    if not all(math.isfinite(m) for m in moments):
        raise ValueError("agreement moments must be finite numbers")
    if min(abs(m) for m in moments) < min_denominator:
        return None
    a_i = math.sqrt(abs(m_ij * m_ik / m_jk))
    a_j = math.sqrt(abs(m_ij * m_jk / m_ik))
    a_k = math.sqrt(abs(m_ik * m_jk / m_ij))
    return min(a_i, 1.0), min(a_j, 1.0), min(a_k, 1.0)


def triplet_errors(d_ij: float, d_ik: float, d_jk: float) -> tuple[float, float, float]:
    """CrEst's triplet (Appendix B): expected distances to the truth (E[d(i,y)], E[d(j,y)],
    E[d(k,y)]) from the three mean pairwise distances, with E[d(a,b)] = E[d(a,y)] + E[d(b,y)].
    May be negative under noise; :func:`distance_scores` guards that."""
    return (d_ij + d_ik - d_jk) / 2.0, (d_ij + d_jk - d_ik) / 2.0, (d_ik + d_jk - d_ij) / 2.0


def _unit_rows(vectors: npt.ArrayLike) -> Array:
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"expected one vector per document (a 2-D array), got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("document vectors must be finite")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Array = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def squared_distances(vectors: npt.ArrayLike) -> Array:
    """Squared Euclidean distances between the L2-normalised rows (2 - 2 cos): the distance
    for which E[d(i,j)] = E[d(i,y)] + E[d(j,y)] holds exactly with independent errors."""
    unit = _unit_rows(vectors)
    sq = np.sum(unit * unit, axis=1)
    distances = sq[:, None] + sq[None, :] - 2.0 * (unit @ unit.T)
    np.fill_diagonal(distances, 0.0)
    clipped: Array = np.clip(distances, 0.0, None)
    return clipped


def expected_errors(distances: Array) -> Array:
    """E[d(i, y)] per document: the mean over every pair (j, k) of other documents of the
    triplet estimate (d_ij + d_ik - d_jk) / 2, in closed form:
    mean_j d_ij - 1/2 * mean_{j<k, j,k != i} d_jk. Needs at least 3 documents."""
    n = distances.shape[0]
    if n < 3:
        raise ValueError("the triplet method needs at least 3 documents")
    rows = distances.sum(axis=1)
    total = distances.sum() / 2.0  # every unordered pair once
    pairs_without_i = (n - 1) * (n - 2) / 2.0
    errors: Array = rows / (n - 1) - 0.5 * (total - rows) / pairs_without_i
    return errors


def distance_scores(vectors: npt.ArrayLike) -> Array | None:
    """theta_i = 1 / E[d(i, y)] for one embedder's vectors (the paper's Eq. 2 and 4), the
    error floored at FLOOR_FRACTION of the set's mean error level. None when the
    documents are fewer than 3 or identical (the caller falls back)."""
    distances = squared_distances(vectors)
    n = distances.shape[0]
    if n < 3:
        return None
    mean_distance = distances.sum() / (n * (n - 1))
    if mean_distance <= IDENTICAL_DISTANCE:
        return None
    floor = FLOOR_FRACTION * mean_distance / 2.0
    scores: Array = 1.0 / np.maximum(expected_errors(distances), floor)
    return scores


def agreement_scores(vectors: npt.ArrayLike, *, min_denominator: float = MIN_DENOMINATOR) -> Array | None:
    """Fu's triplet with cosine similarity as the agreement moment: a_i is the mean, over
    pairs (j, k) of other documents with |cos(j, k)| >= ``min_denominator``, of
    min(1, sqrt(|cos(i,j) cos(i,k) / cos(j,k)|)). A document with no usable triplet gets
    the mean of the others. None when the documents are fewer than 3 or identical, or
    no triplet is usable at all."""
    unit = _unit_rows(vectors)
    n = unit.shape[0]
    if n < 3:
        return None
    similarity = unit @ unit.T
    if np.all(squared_distances(unit) <= IDENTICAL_DISTANCE):
        return None
    scores = np.full(n, np.nan)
    others = np.arange(n)
    for i in range(n):
        rest = others[others != i]
        j, k = np.triu_indices(len(rest), k=1)
        j, k = rest[j], rest[k]
        denominators = np.abs(similarity[j, k])
        usable = denominators >= min_denominator
        if not np.any(usable):
            continue
        ratio = np.abs(similarity[i, j[usable]] * similarity[i, k[usable]]) / denominators[usable]
        scores[i] = float(np.mean(np.minimum(np.sqrt(ratio), 1.0)))
    if np.all(np.isnan(scores)):
        return None
    result: Array = np.where(np.isnan(scores), np.nanmean(scores), scores)
    return result


def standardise(scores: Array) -> Array:
    """One embedder's scores on [0, 1], divided by the largest.

    Not min-max: min-max would put some document at 0 even when every document agrees
    (and 0 credibility removes a document from the white-box model's attention); a ratio
    to the best keeps near-equal documents near 1 and still removes the embedder's scale,
    which is what the paper standardises for."""
    top = float(np.max(scores)) if scores.size else 0.0
    if not math.isfinite(top) or top <= 0.0:
        return np.ones_like(scores)
    result: Array = np.clip(scores / top, 0.0, 1.0)
    return result


@dataclass(frozen=True)
class CredibilityEstimate:
    """Averaged credibility per document (in input order), each embedder's standardised
    scores, and the fallback used, if any (None: estimated from agreement)."""

    scores: tuple[float, ...]
    per_embedder: dict[str, tuple[float, ...]] = field(default_factory=dict)
    fallback: str | None = None

    def labels(self) -> list[Label]:
        return [credibility_label(s) for s in self.scores]


def ensemble_credibility(
    vector_sets: Sequence[tuple[str, npt.ArrayLike]], method: Method = "distance"
) -> CredibilityEstimate:
    """Credibility from several embedders' vectors of the same documents: per embedder the
    triplet scores (``method``), standardised to [0, 1], then averaged. An embedder whose
    vectors are degenerate (identical documents) contributes 1.0 for every document."""
    if method not in METHODS:
        raise ValueError(f"unknown credibility method {method!r}; choose one of {METHODS}")
    if not vector_sets:
        raise ValueError("credibility needs at least one embedder")
    sizes = {np.asarray(v).shape[0] for _, v in vector_sets}
    if len(sizes) != 1:
        raise ValueError(f"every embedder must embed the same documents (got {sorted(sizes)} rows)")
    n = sizes.pop()
    if n < 3:
        ones = tuple(1.0 for _ in range(n))
        return CredibilityEstimate(ones, {name: ones for name, _ in vector_sets}, FEWER_THAN_THREE if n else None)
    scorer = distance_scores if method == "distance" else agreement_scores
    per_embedder: dict[str, tuple[float, ...]] = {}
    degenerate = 0
    for name, vectors in vector_sets:
        raw = scorer(vectors)
        if raw is None:
            degenerate += 1
            per_embedder[name] = tuple(1.0 for _ in range(n))
        else:
            per_embedder[name] = tuple(float(s) for s in standardise(raw))
    averaged = np.mean(np.array(list(per_embedder.values())), axis=0)
    fallback = IDENTICAL if degenerate == len(vector_sets) else None
    return CredibilityEstimate(tuple(float(s) for s in averaged), per_embedder, fallback)


def estimate_credibility(
    texts: Sequence[str], embedders: Sequence[Embedder], method: Method = "distance"
) -> CredibilityEstimate:
    """Embed ``texts`` with every embedder and run :func:`ensemble_credibility`. Embedders
    sharing a name are counted once."""
    unique = list({e.name: e for e in embedders}.values())
    if len(texts) < 3:
        ones = tuple(1.0 for _ in texts)
        return CredibilityEstimate(ones, {e.name: ones for e in unique}, FEWER_THAN_THREE if texts else None)
    return ensemble_credibility([(e.name, e.encode(list(texts))) for e in unique], method)


def credibility_label(score: float) -> Label:
    """low / medium / high at the fixed cut points LOW_CUT and HIGH_CUT (see above)."""
    if not math.isfinite(score):
        raise ValueError("credibility must be a finite number")
    if score >= HIGH_CUT:
        return "high"
    if score >= LOW_CUT:
        return "medium"
    return "low"


class LexicalEmbedder:
    """A cheap second view for the ensemble: hashed stemmed content words and word pairs,
    L2-normalised. It sees wording where a sentence encoder sees meaning, so its errors
    are less correlated with the encoder's than a second encoder's would be; hashing is
    keyed (blake2b), never Python's salted ``hash``, so scores repeat across processes."""

    name = "lexical-hash-512"

    def __init__(self, dimension: int = 512) -> None:
        self.dimension = dimension

    def _bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dimension

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = content_words(text)
            for token in [*tokens, *(f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False))]:
                out[row, self._bucket(token)] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


# --- the ensemble a strategy uses --------------------------------------------------------

ENSEMBLES: tuple[str, ...] = ("all", "context+lexical", "context")
_EXTRA_EMBEDDERS: dict[str, Callable[[], Embedder]] = {}


def register_ensemble_embedder(name: str, factory: Callable[[], Embedder]) -> None:
    """Add an embedder to the "all" ensemble (the product registers the extra sentence
    encoders it has installed; the factory is called when a strategy first needs it)."""
    _EXTRA_EMBEDDERS[name] = factory


def ensemble_embedders(primary: Embedder, choice: str = "all") -> list[Embedder]:
    """The embedders behind ``choice``: "context" is the retrieval embedder alone,
    "context+lexical" adds :class:`LexicalEmbedder`, "all" adds every registered extra."""
    if choice not in ENSEMBLES:
        raise ValueError(f"unknown ensemble {choice!r}; choose one of {ENSEMBLES}")
    embedders: list[Embedder] = [primary]
    if choice != "context":
        embedders.append(LexicalEmbedder())
    if choice == "all":
        embedders.extend(factory() for factory in _EXTRA_EMBEDDERS.values())
    return embedders
