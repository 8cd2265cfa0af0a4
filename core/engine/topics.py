"""Topics: what the questions are about, found from the questions themselves.

A source's reliability can depend on the subject (a vendor is right about its own products,
a sports desk about results); per-topic reliability (core.engine.reliability.topical) needs
the questions grouped into a handful of topics a person can read. This module:

- **finds** them (`find_topics`): a curator's tags where most queries carry one, else
  spherical k-means over the queries' text, in two views: their embeddings and their
  character n-grams (`lexical_vectors`: the words' letters, which tell apart kinds of
  question a sentence embedding maps together). With the run's answers at hand, the split
  kept is the one (view and number of topics) whose per-topic accuracies best predict, on
  held-out queries placed by their text, which sources agree with the estimated answers
  (`held_out_fit`), and none unless it beats one accuracy per source; the kept split's
  queries then move to the topic their text and their sources' agreement together make most
  likely (`refine_by_answers`), when that predicts held-out answers better; without them, the
  embedding's split with the best silhouette (one topic when no split is clearly better);
- **names** each from its queries: the words most particular to it (`topic_name`);
- **assigns** a question softly (`TopicModel.membership`): a softmax of its cosine to each
  topic's centroid (in the view the topics were found in; a curator's tags, in the view whose
  placement best predicts held-out answers, `_tags_view`), at a temperature calibrated on
  held-out discovery queries (`placement_temperature`: a question between two topics is
  weighed by both, as sure of its topic as queries like it turned out to be);
- keeps them **stable across runs** (`match_topics`): a new run's topic takes the key and
  name of the earlier topic whose centroid it is closest to (cosine at least MATCH_COSINE),
  so a curator's rename survives re-estimation.

The module is pure numpy; no database, no model (the caller encodes the texts).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from core.engine.types import JSONObject

FloatMatrix = npt.NDArray[np.float64]

MAX_TOPICS = 6  # a handful per corpus: more would leave each too few answers to estimate
MIN_TOPIC_QUERIES = 8  # a topic rests on at least this many queries ...
MIN_TOPIC_SHARE = 0.08  # ... and this share of them
# A split into topics is kept only when its silhouette (mean cosine silhouette of the queries)
# reaches this; below it the queries form no groups worth weighing apart, and one topic
# (today's one reliability per source) is the honest answer.
MIN_SILHOUETTE = 0.04
# Mean membership of a query in its own topic while splits are scored and refined (`_temperature`).
TARGET_CONFIDENCE = 0.8
MATCH_COSINE = 0.8  # a new topic keeps an earlier topic's key and name at this centroid cosine
KMEANS_RESTARTS = 4
# Choosing by the answers (`_find_by_answers`) compares a dozen splits, each the best of this
# many k-means restarts (the lexical view's clusters are less round than the embedding's: 4
# restarts left PoisonedRAG's question kinds mixed more often; measured: topic Pearson 0.70
# against 0.73 with 10 at 4 topic-hammer adversaries, seeds 0-4, no control split).
ANSWERS_RESTARTS = 10
KMEANS_ITERATIONS = 50
MIN_TAGGED_SHARE = 0.8  # tags define the topics when at least this share of queries carry one

_WORD = re.compile(r"[a-z][a-z'\-]{2,}")
STOPWORDS = frozenset(
    """
    the and for are was were who whom whose what when where which why how does did has have had
    with from into that this these those there their they them than then its it's his her hers
    him she you your our out off not but all any can could would should will shall may might
    been being about after before over under between during most more many much some such very
    also only other same each both few own too just one two three first last name named called
    is of in on at by to as an or be a do so if no yes known made make use used year years
    """.split()  # noqa: SIM905  # a word list reads better as text
)


@dataclass(frozen=True)
class Topic:
    key: str  # stable within a corpus: "t1", "t2", ... or a curator's tag
    name: str  # a few words particular to its queries, or the tag
    centroid: tuple[float, ...]  # unit vector: the mean of its queries (what runs are matched by)
    size: int  # discovery queries in it
    # Unit vectors of sub-groups of its queries (a topic need not be one round cloud: the
    # questions of one source's bad subject can read several ways); empty: the centroid alone.
    prototypes: tuple[tuple[float, ...], ...] = ()
    # Its queries' mean in the lexical view (`lexical_vectors`), where the model assigns by
    # the words' letters; empty: the embedding alone.
    lexical: tuple[float, ...] = ()

    def points(self) -> tuple[tuple[float, ...], ...]:
        return self.prototypes or (self.centroid,)


@dataclass(frozen=True)
class TopicModel:
    """Topics with their centroids and the softmax temperature that assigns a question."""

    topics: list[Topic]
    temperature: float = 0.05
    source: str = "clusters"  # "clusters", "tags" or "single"
    # "embedding": a question is assigned by its embedding; "lexical": by its character
    # n-grams (`lexical_vectors`, weighted by ``idf``), when its text is at hand and every
    # topic has its lexical centroid (else by the embedding).
    view: str = "embedding"
    idf: tuple[float, ...] = ()
    lexical_temperature: float = 0.05

    @property
    def keys(self) -> list[str]:
        return [t.key for t in self.topics]

    def centroids(self) -> FloatMatrix:
        return np.array([t.centroid for t in self.topics], dtype=np.float64).reshape(len(self.topics), -1)

    @property
    def lexical(self) -> bool:
        """Whether a question's text assigns it (the lexical view, complete)."""
        return self.view == "lexical" and bool(self.idf) and all(len(t.lexical) == len(self.idf) for t in self.topics)

    def membership(
        self,
        vectors: Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]] | Sequence[npt.NDArray[np.floating[Any]]],
        texts: Sequence[str] | None = None,
    ) -> FloatMatrix:
        """Per vector, a distribution over the topics (rows sum to 1): a softmax over the
        topics of each one's closest prototype (a topic with more prototypes gets no more
        weight for it). In the lexical view, with ``texts`` (one per vector): a softmax of
        each text's cosine to the topics' lexical centroids."""
        matrix = _unit(np.asarray(vectors, dtype=np.float64).reshape(len(vectors), -1))
        if len(self.topics) <= 1:
            return np.ones((matrix.shape[0], len(self.topics)))
        if texts is not None and self.lexical and len(texts) == matrix.shape[0]:
            words_view = lexical_vectors(texts, np.array(self.idf, dtype=np.float64))
            centroids = _unit(np.array([t.lexical for t in self.topics], dtype=np.float64))
            return _softmax(words_view @ centroids.T / max(self.lexical_temperature, 1e-6))
        return _softmax(_closest(matrix, self.topics) / max(self.temperature, 1e-6))

    def as_dict(self) -> JSONObject:
        lexical: JSONObject = (
            {"view": self.view, "idf": [round(x, 4) for x in self.idf], "lexical_temperature": self.lexical_temperature}
            if self.view != "embedding"
            else {}
        )
        return {
            "source": self.source,
            "temperature": self.temperature,
            **lexical,
            "topics": [
                {
                    "key": t.key,
                    "name": t.name,
                    "size": t.size,
                    "centroid": [round(x, 6) for x in t.centroid],
                    "prototypes": [[round(x, 6) for x in p] for p in t.prototypes],
                    **({"lexical": [round(x, 5) for x in t.lexical]} if t.lexical else {}),
                }
                for t in self.topics
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TopicModel:
        topics = [
            Topic(
                str(t["key"]),
                str(t["name"]),
                tuple(float(x) for x in t["centroid"]),
                int(t.get("size", 0)),
                tuple(tuple(float(x) for x in p) for p in t.get("prototypes", [])),
                tuple(float(x) for x in t.get("lexical", [])),
            )
            for t in data.get("topics", [])  # type: ignore[attr-defined]  # stored by as_dict: a list of dicts
        ]
        return cls(
            topics,
            float(data.get("temperature", 0.05)),  # type: ignore[arg-type]  # as_dict wrote a float
            str(data.get("source", "clusters")),
            str(data.get("view", "embedding")),
            tuple(float(x) for x in data.get("idf", [])),  # type: ignore[attr-defined]  # as_dict wrote a list
            float(data.get("lexical_temperature", 0.05)),  # type: ignore[arg-type]  # as_dict wrote a float
        )


@dataclass
class TopicFit:
    """A discovery's outcome: the model, each discovery query's topic index, the silhouette."""

    model: TopicModel
    labels: list[int]
    silhouette: float = 0.0
    # k -> silhouette; or, chosen by the answers, the held-out gain over one topic less its
    # cost (k: the embedding's split, -k: the lexical view's)
    tried: dict[int, float] = field(default_factory=dict)


def _unit(matrix: FloatMatrix) -> FloatMatrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _points(topics: Sequence[Topic]) -> tuple[FloatMatrix, npt.NDArray[np.int64]]:
    """Every topic's prototypes stacked, with the index of the topic each belongs to."""
    rows = [(p, i) for i, t in enumerate(topics) for p in t.points()]
    return np.array([p for p, _ in rows], dtype=np.float64), np.array([i for _, i in rows], dtype=np.int64)


def _closest(matrix: FloatMatrix, topics: Sequence[Topic]) -> FloatMatrix:
    """vectors x topics: the cosine of each vector to each topic's closest prototype."""
    points, owner = _points(topics)
    scores = matrix @ points.T
    return np.stack([scores[:, owner == i].max(axis=1) for i in range(len(topics))], axis=1)


def _softmax(scores: FloatMatrix) -> FloatMatrix:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    out: FloatMatrix = shifted / shifted.sum(axis=1, keepdims=True)
    return out


def spherical_kmeans(
    vectors: FloatMatrix, k: int, seed: int = 0, restarts: int = KMEANS_RESTARTS
) -> tuple[npt.NDArray[np.int64], FloatMatrix]:
    """k-means on the unit sphere (cosine), k-means++ seeding, the best of a few restarts."""
    rng = np.random.default_rng(seed)
    n = vectors.shape[0]
    best: tuple[float, npt.NDArray[np.int64], FloatMatrix] | None = None
    for _ in range(restarts):
        centres = [vectors[int(rng.integers(n))]]
        for _c in range(1, k):
            distance = np.clip(1.0 - (vectors @ np.array(centres).T).max(axis=1), 0.0, None)
            total = float(distance.sum())
            pick = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=distance / total))
            centres.append(vectors[pick])
        centroids = _unit(np.array(centres))
        labels = np.zeros(n, dtype=np.int64)
        for _it in range(KMEANS_ITERATIONS):
            labels_new = np.asarray((vectors @ centroids.T).argmax(axis=1), dtype=np.int64)
            for c in range(k):
                members = vectors[labels_new == c]
                if len(members):
                    centroids[c] = members.sum(axis=0)
                else:  # an empty cluster restarts at the point worst served
                    centroids[c] = vectors[int((vectors @ centroids.T).max(axis=1).argmin())]
            centroids = _unit(centroids)
            if np.array_equal(labels_new, labels) and _it:
                break
            labels = labels_new
        inertia = float((vectors @ centroids.T).max(axis=1).sum())
        if best is None or inertia > best[0]:
            best = (inertia, labels, centroids)
    assert best is not None
    return best[1], best[2]


def silhouette(vectors: FloatMatrix, labels: npt.NDArray[np.int64]) -> float:
    """Mean silhouette with cosine distance (0 for a single cluster)."""
    clusters = np.unique(labels)
    if len(clusters) < 2:
        return 0.0
    distance = 1.0 - vectors @ vectors.T
    scores = []
    for i in range(len(labels)):
        own = labels == labels[i]
        if own.sum() <= 1:
            scores.append(0.0)
            continue
        a = float(distance[i, own].sum() / (own.sum() - 1))
        b = min(float(distance[i, labels == c].mean()) for c in clusters if c != labels[i])
        scores.append((b - a) / max(a, b) if max(a, b) > 0 else 0.0)
    return float(np.mean(scores))


def words(text: str) -> list[str]:
    return [w.strip("'-") for w in _WORD.findall(text.lower()) if w.strip("'-") not in STOPWORDS]


def topic_name(texts: Sequence[str], others: Sequence[str], n_words: int = 3) -> str:
    """The words most particular to ``texts`` against ``others`` (smoothed frequency ratio,
    favouring words many of its queries use), joined: "music · song · sings"."""
    inside = Counter(w for t in texts for w in set(words(t)))
    outside = Counter(w for t in others for w in set(words(t)))
    n_in, n_out = max(len(texts), 1), max(len(others), 1)
    scored = sorted(
        ((inside[w] / n_in) * np.log((inside[w] / n_in + 0.01) / (outside[w] / n_out + 0.01)), w)
        for w in inside
        if inside[w] >= 2 or len(texts) < 4
    )
    chosen = [w for score, w in reversed(scored) if score > 0][:n_words]
    return " · ".join(chosen) if chosen else "general"


# The temperature a new question is placed at is calibrated on held-out queries: each
# discovery query scored against topics built without its fold, the temperature the one that
# gives their own topics the highest likelihood (each topic counting equally). The in-sample
# rule (`_temperature`, TARGET_CONFIDENCE), fitted on queries the centroids were made of,
# placed new questions more softly than they turn out to be placed (measured on PoisonedRAG's
# subsets, 100 queries, scripts/bench_topic_placement.py: a new question's mean membership in
# its own subset, lexical view 0.65 in-sample against 0.74 calibrated; embedding prototypes
# 0.46 against 0.51, where it is placed right 62 times in 100). No sharper than
# MIN_TEMPERATURE: a hundred queries separated perfectly do not make a new one certain.
MIN_TEMPERATURE = 0.01


def held_out_scores(
    space: FloatMatrix, labels: npt.NDArray[np.int64], *, prototypes: bool = False, seed: int = 0
) -> FloatMatrix:
    """queries x topics: each query's cosine to each topic's closest point (its centroid, or
    with ``prototypes`` its prototypes as `_fit` cuts them) built from the other folds'
    queries; -inf where a fold left a topic without queries (no softmax places a query there,
    and a query whose own topic it is says nothing of the temperature)."""
    n, k = space.shape[0], int(labels.max()) + 1
    out = np.full((n, k), -np.inf)
    for fold in range(CV_FOLDS):
        test = np.arange(fold, n, CV_FOLDS)
        train = np.setdiff1d(np.arange(n), test)
        for t in range(k):
            members = space[train][labels[train] == t]
            if not len(members):
                continue
            points = topic_points(members, seed) if prototypes else _unit(members.sum(axis=0)[None, :])
            out[test, t] = (space[test] @ points.T).max(axis=1)
    return out


def calibrated_temperature(scores: FloatMatrix, labels: npt.NDArray[np.int64]) -> float:
    """The temperature in [MIN_TEMPERATURE, 1] maximising the likelihood of ``labels`` under
    the softmax of held-out ``scores`` (queries x topics), each topic's queries counting
    equally (the log-likelihood is concave in the inverse temperature: ternary search on a
    log scale)."""
    sizes = np.bincount(labels, minlength=scores.shape[1]).astype(np.float64)
    weight = 1.0 / np.maximum(sizes[labels], 1.0)
    rows = np.arange(len(labels))

    def loglik(log_t: float) -> float:
        z = scores / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        log_p = z[rows, labels] - np.log(np.exp(z).sum(axis=1))
        return float((weight * log_p).sum())

    low, high = float(np.log(MIN_TEMPERATURE)), 0.0
    for _ in range(60):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        if loglik(a) < loglik(b):
            low = a
        else:
            high = b
    return float(np.exp((low + high) / 2))


def placement_temperature(
    space: FloatMatrix, labels: npt.NDArray[np.int64], in_sample: FloatMatrix, *, prototypes: bool, seed: int = 0
) -> float:
    """The temperature a model places new questions at (`calibrated_temperature` on
    `held_out_scores`); the in-sample rule (`_temperature` on ``in_sample``, queries x topics
    cosines) where there are too few queries, or a topic too small, to hold folds out."""
    k = int(labels.max()) + 1 if len(labels) else 0
    if k < 2 or len(labels) < 2 * CV_FOLDS or np.bincount(labels, minlength=k).min() < 2:
        return _temperature(in_sample, labels)
    held_out = held_out_scores(space, labels, prototypes=prototypes, seed=seed)
    # A query whose own topic its fold left empty (a topic of a few queries, all in one fold)
    # is not scored.
    scored = np.isfinite(held_out[np.arange(len(labels)), labels])
    if len(np.unique(labels[scored])) < 2:
        return _temperature(in_sample, labels)
    return calibrated_temperature(held_out[scored], labels[scored])


def _temperature(scores: FloatMatrix, labels: npt.NDArray[np.int64]) -> float:
    """The softmax temperature at which queries' membership in their own topic (``scores``:
    queries x topics cosines) is TARGET_CONFIDENCE on average, each topic counting equally (a
    small topic's queries are not drowned by a large one's; bisection on a log scale): how a
    split's placements are scored while topics are chosen, the text's prior when the answers
    refine a split (`refine_by_answers`), and the placement where too few queries are held out
    to calibrate it."""
    groups = [labels == t for t in range(scores.shape[1]) if (labels == t).any()]
    low, high = 1e-3, 1.0
    for _ in range(40):
        mid = float(np.sqrt(low * high))
        own_all = _softmax(scores / mid)[np.arange(len(labels)), labels]
        own = float(np.mean([own_all[g].mean() for g in groups]))
        if own > TARGET_CONFIDENCE:
            low = mid
        else:
            high = mid
    return float(np.sqrt(low * high))


# The lexical view: a text as its character n-grams (1 to 3 letters, within words padded by
# a space, case kept), hashed into LEXICAL_DIM buckets, sublinear counts times an idf fitted
# on the discovery queries, unit length. Questions of one kind share spellings and forms
# (names, "how many", capitalised titles) that a sentence embedding, trained to ignore them,
# does not separate.
LEXICAL_DIM = 2048
LEXICAL_NGRAMS = (1, 2, 3)


def _ngram_counts(text: str) -> dict[int, float]:
    counts: dict[int, float] = {}
    for word in text.split():
        padded = f" {word} "
        for n in LEXICAL_NGRAMS:
            for i in range(len(padded) - n + 1):
                bucket = zlib.crc32(padded[i : i + n].encode()) % LEXICAL_DIM
                counts[bucket] = counts.get(bucket, 0.0) + 1.0
    return counts


def _lexical_counts(texts: Sequence[str]) -> FloatMatrix:
    out = np.zeros((len(texts), LEXICAL_DIM), dtype=np.float64)
    for i, text in enumerate(texts):
        for bucket, count in _ngram_counts(text).items():
            out[i, bucket] = 1.0 + np.log(count)
    return out


def lexical_idf(texts: Sequence[str]) -> FloatMatrix:
    """Smoothed inverse document frequency of each bucket over ``texts``."""
    df = (_lexical_counts(texts) > 0).sum(axis=0)
    idf: FloatMatrix = np.log((1.0 + len(texts)) / (1.0 + df)) + 1.0
    return idf


def lexical_vectors(texts: Sequence[str], idf: FloatMatrix) -> FloatMatrix:
    """texts x LEXICAL_DIM unit vectors of the lexical view."""
    return _unit(_lexical_counts(texts) * idf[None, :])


# Choosing the topics by the answers they explain (`find_topics` with ``agreement``): a split
# is worth making when, on queries it has not seen, the per-topic accuracies of the rest of
# the queries, applied through each held-out query's topics as its text places it, predict
# which sources agree with the estimated answer better than one accuracy per source does.
CV_FOLDS = 5
CV_STRENGTH = 4.0  # pseudo-answers pulling a fold's cell toward the source's pooled rate
# The split must beat one accuracy per source by this many nats of held-out log-likelihood
# (on about 500 held-out answers), after paying TOPIC_COST nats for each topic beyond the
# first: the best of a dozen splits cut by chance gains up to about 9 nats with 5 or 6
# topics (measured on PoisonedRAG's adversary-hammer and beta priors, where reliability does
# not vary by topic), and a split that follows a real difference gains 7 to 20 with 3.
CV_MARGIN = 2.0
TOPIC_COST = 2.0


def _pooled(hits: FloatMatrix, seen: FloatMatrix) -> FloatMatrix:
    """Each source's agreement rate over all the queries (0.5 where it answered none)."""
    total = seen.sum(axis=0)
    out: FloatMatrix = np.divide(hits.sum(axis=0), total, out=np.full(hits.shape[1], 0.5), where=total > 0)
    return out


def _topic_rates(onehot: FloatMatrix, hits: FloatMatrix, seen: FloatMatrix, pooled: FloatMatrix) -> FloatMatrix:
    """topics x sources agreement rates of a labelling (``onehot``: queries x topics), each
    smoothed toward the source's ``pooled`` rate by CV_STRENGTH answers."""
    out: FloatMatrix = (onehot.T @ hits + CV_STRENGTH * pooled) / (onehot.T @ seen + CV_STRENGTH)
    return out


def held_out_fit(
    space: FloatMatrix, labels: npt.NDArray[np.int64], temperature: float, agree: FloatMatrix, answered: FloatMatrix
) -> float:
    """Held-out Bernoulli log-likelihood of the queries x sources ``agree`` (on ``answered``
    cells) under a labelling of the queries (one topic: ``labels`` all 0), each held-out
    query placed by the softmax, at ``temperature``, of its cosine in ``space`` (unit rows:
    its text) to the other folds' topic centroids; cells from the other folds."""
    n = agree.shape[0]
    k = int(labels.max()) + 1 if len(labels) else 1
    total = 0.0
    for fold in range(CV_FOLDS):
        test = np.arange(fold, n, CV_FOLDS)
        train = np.setdiff1d(np.arange(n), test)
        hits, seen = agree[train] * answered[train], answered[train]
        pooled = _pooled(hits, seen)
        if k == 1:
            p = np.tile(pooled, (len(test), 1))
        else:
            onehot = np.eye(k)[labels[train]]
            cells = _topic_rates(onehot, hits, seen, pooled)
            centroids = _unit(onehot.T @ space[train])
            p = _softmax(space[test] @ centroids.T / max(temperature, 1e-6)) @ cells
        p = np.clip(p, 0.02, 0.98)
        a, m = agree[test], answered[test]
        total += float((m * (a * np.log(p) + (1 - a) * np.log(1 - p))).sum())
    return total


PROTOTYPE_QUERIES = 6  # a topic gets one prototype per this many of its queries ...
MAX_PROTOTYPES = 6  # ... up to this many


def topic_points(members: FloatMatrix, seed: int = 0) -> FloatMatrix:
    """A topic's prototypes from its queries' unit vectors ``members``: one per
    PROTOTYPE_QUERIES queries (k-means on the sphere), at most MAX_PROTOTYPES; its centroid
    alone below 2 * PROTOTYPE_QUERIES queries."""
    n_proto = min(MAX_PROTOTYPES, max(1, len(members) // PROTOTYPE_QUERIES))
    return spherical_kmeans(members, n_proto, seed)[1] if n_proto > 1 else _unit(members.sum(axis=0)[None, :])


def find_topics(
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]] | Sequence[npt.NDArray[np.floating[Any]]],
    tags: Sequence[str | None] | None = None,
    *,
    max_topics: int = MAX_TOPICS,
    seed: int = 0,
    agreement: tuple[FloatMatrix, FloatMatrix] | None = None,
) -> TopicFit:
    """Topics of ``texts`` (encoded as ``vectors``): the tags when at least MIN_TAGGED_SHARE
    of them carry one (and there are two or more; placed in the view that explains the
    answers where ``agreement`` is given, `_tags_view`), else clusters: chosen, and refined,
    by the answers they explain where ``agreement`` is given (queries x sources: whether each
    source agreed with the estimated answer, and whether it answered; `_find_by_answers`),
    else by silhouette; a single topic when neither splits them."""
    matrix = _unit(np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1))
    n = len(texts)
    if n == 0:
        return TopicFit(TopicModel([], source="single"), [])
    tagged = [t.strip() if t else "" for t in (tags or [None] * n)]
    distinct = sorted({t for t in tagged if t})
    if len(distinct) >= 2 and sum(1 for t in tagged if t) >= MIN_TAGGED_SHARE * n:
        index = {t: i for i, t in enumerate(distinct)}
        centroids = _unit(np.array([matrix[[i for i in range(n) if tagged[i] == t]].sum(axis=0) for t in distinct]))
        labels = np.array(
            [index[t] if t else int((matrix[i] @ centroids.T).argmax()) for i, t in enumerate(tagged)], dtype=np.int64
        )
        fit = _fit(texts, matrix, labels, source="tags", names=distinct, seed=seed)
        return fit if agreement is None else _tags_view(fit, texts, matrix, agreement)
    floor = max(MIN_TOPIC_QUERIES, int(np.ceil(MIN_TOPIC_SHARE * n)))
    if agreement is not None:
        return _find_by_answers(texts, matrix, agreement, max_topics=max_topics, floor=floor, seed=seed)
    space = matrix
    tried: dict[int, float] = {}
    best: tuple[float, npt.NDArray[np.int64]] | None = None
    for k in range(2, min(max_topics, n // floor) + 1):
        labels, _centroids = spherical_kmeans(space, k, seed)
        if np.bincount(labels, minlength=k).min() < floor:
            continue
        score = silhouette(space, labels)
        tried[k] = round(score, 4)
        if score >= MIN_SILHOUETTE and (best is None or score > best[0]):
            best = (score, labels)
    if best is None:
        return _single(matrix, tried)
    fit = _fit(texts, matrix, best[1], source="clusters", seed=seed)
    fit.silhouette, fit.tried = best[0], tried
    return fit


def _single(matrix: FloatMatrix, tried: dict[int, float]) -> TopicFit:
    n = matrix.shape[0]
    single = Topic("t1", "all questions", tuple(float(x) for x in _unit(matrix.sum(axis=0)[None, :])[0]), n)
    return TopicFit(TopicModel([single], source="single"), [0] * n, 0.0, tried)


def _find_by_answers(
    texts: Sequence[str],
    matrix: FloatMatrix,
    agreement: tuple[FloatMatrix, FloatMatrix],
    *,
    max_topics: int,
    floor: int,
    seed: int,
) -> TopicFit:
    """Topics chosen by the answers they explain: k-means in the embedding and in the lexical
    view, k from 2 to ``max_topics``, each split scored by `held_out_fit`; the best kept when
    it beats one topic by CV_MARGIN, else one topic. The clusters are cut from the text; the
    answers choose among them, and then move queries between the chosen split's topics
    (`refine_by_answers`), kept only when that explains held-out answers better. Topics are
    never cut from the answers alone (cutting where sources happened to disagree would find
    them different by construction): a split must first beat one topic from the text."""
    n = matrix.shape[0]
    agree, answered = (np.asarray(a, dtype=np.float64) for a in agreement)
    idf = lexical_idf(texts)
    views = {"embedding": matrix, "lexical": lexical_vectors(texts, idf)}
    baseline = held_out_fit(matrix, np.zeros(n, dtype=np.int64), 1.0, agree, answered)
    tried: dict[int, float] = {}
    best: tuple[float, str, npt.NDArray[np.int64]] | None = None
    for name, space in views.items():
        for k in range(2, min(max_topics, n // floor) + 1):
            labels, centroids = spherical_kmeans(space, k, seed, ANSWERS_RESTARTS)
            if np.bincount(labels, minlength=k).min() < floor:
                continue
            temperature = _temperature(space @ centroids.T, labels)
            score = held_out_fit(space, labels, temperature, agree, answered) - baseline - TOPIC_COST * (k - 1)
            tried[k if name == "embedding" else -k] = round(score, 3)
            if best is None or score > best[0]:
                best = (score, name, labels)
    if best is None or best[0] < CV_MARGIN:
        return _single(matrix, tried)
    score, name, labels = best
    # The split refined by the answers (`refine_by_answers`), kept when it explains held-out
    # answers better still.
    space = views[name]
    refined = refine_by_answers(space, labels, agree, answered, floor)
    if not np.array_equal(refined, labels):
        k = int(refined.max()) + 1
        if _labelled_fit(space, refined, agree, answered) - baseline - TOPIC_COST * (k - 1) > score:
            labels = refined
    fit = _fit(texts, matrix, labels, source="clusters", seed=seed)
    fit.tried = tried
    if name == "lexical":
        _to_lexical(fit, idf, views["lexical"])
    return fit


REFINE_ROUNDS = 5


def refine_by_answers(
    space: FloatMatrix,
    labels: npt.NDArray[np.int64],
    agree: FloatMatrix,
    answered: FloatMatrix,
    floor: int,
    rounds: int = REFINE_ROUNDS,
) -> npt.NDArray[np.int64]:
    """A split of the queries moved by their answers (in the manner of FaitCrowd, Ma et al.,
    KDD 2015, where a question's topic is drawn from its words and its answers together):
    each query goes to the topic that maximises its text's membership (the softmax of its
    cosine in ``space`` to the topics' centroids, at the fitted temperature) times the
    likelihood of which sources agreed with the estimate on it under the topic's agreement
    rates (``agree`` on ``answered`` cells, each rate smoothed toward the source's pooled
    rate by CV_STRENGTH answers); repeated until no query moves, at most ``rounds`` times,
    and stopped before a topic falls under ``floor`` queries. A query whose text sits
    between two subjects, or a subject split by the text along the wrong line (NQ's and MS
    MARCO's short questions read alike), goes where its sources' agreement says."""
    k = int(labels.max()) + 1
    hits = agree * answered
    misses = (1.0 - agree) * answered
    pooled = _pooled(hits, answered)
    for _ in range(rounds):
        onehot = np.eye(k)[labels]
        cells = np.clip(_topic_rates(onehot, hits, answered, pooled), 0.02, 0.98)
        centroids = _unit(onehot.T @ space)
        temperature = _temperature(space @ centroids.T, labels)
        scores = space @ centroids.T / max(temperature, 1e-6)
        log_prior = scores - scores.max(axis=1, keepdims=True)
        log_prior = log_prior - np.log(np.exp(log_prior).sum(axis=1, keepdims=True))
        loglik = hits @ np.log(cells).T + misses @ np.log(1.0 - cells).T
        new = np.asarray((log_prior + loglik).argmax(axis=1), dtype=np.int64)
        if np.bincount(new, minlength=k).min() < floor or np.array_equal(new, labels):
            break
        labels = new
    return labels


def _labelled_fit(
    space: FloatMatrix, labels: npt.NDArray[np.int64], agree: FloatMatrix, answered: FloatMatrix
) -> float:
    """`held_out_fit` of a labelling placed in ``space`` by its topics' centroids there, at
    the temperature fitted to it."""
    centroids = _unit(np.eye(int(labels.max()) + 1)[labels].T @ space)
    return held_out_fit(space, labels, _temperature(space @ centroids.T, labels), agree, answered)


def _to_lexical(fit: TopicFit, idf: FloatMatrix, space: FloatMatrix) -> None:
    """``fit``'s model made to assign a question in the lexical view (``space``: the discovery
    queries' lexical vectors under ``idf``): each topic's lexical centroid, the view's own
    temperature."""
    ordered = np.array(fit.labels, dtype=np.int64)
    centroids = _unit(np.eye(len(fit.model.topics))[ordered].T @ space)
    topics = [replace(t, lexical=tuple(float(x) for x in c)) for t, c in zip(fit.model.topics, centroids, strict=True)]
    fit.model = TopicModel(
        topics,
        fit.model.temperature,
        fit.model.source,
        view="lexical",
        idf=tuple(float(x) for x in idf),
        lexical_temperature=placement_temperature(space, ordered, space @ centroids.T, prototypes=False),
    )


def _tags_view(
    fit: TopicFit, texts: Sequence[str], matrix: FloatMatrix, agreement: tuple[FloatMatrix, FloatMatrix]
) -> TopicFit:
    """A curator's tags, assigned to new questions in the view (embedding or lexical) in which
    they best predict, on held-out queries placed by their text, which sources agree with the
    estimated answers (`held_out_fit`); the embedding's unless the lexical view does better.
    The tags are the topics either way; the view decides how a new question finds its tag
    (measured on PoisonedRAG's topic-hammer with its subsets as tags, where the embedding
    places a question in its own subset two times in three: docs/benchmarks.md)."""
    if len(fit.model.topics) < 2:
        return fit
    agree, answered = (np.asarray(a, dtype=np.float64) for a in agreement)
    labels = np.array(fit.labels, dtype=np.int64)
    idf = lexical_idf(texts)
    lexical = lexical_vectors(texts, idf)
    scores = [_labelled_fit(space, labels, agree, answered) for space in (matrix, lexical)]
    if scores[1] > scores[0] + CV_MARGIN:  # a clear gain, not chance between two placements
        _to_lexical(fit, idf, lexical)
    return fit


def _fit(
    texts: Sequence[str],
    matrix: FloatMatrix,
    labels: npt.NDArray[np.int64],
    *,
    source: str,
    names: Sequence[str] | None = None,
    seed: int = 0,
) -> TopicFit:
    """Topics from a labelling of the texts: largest first (so "t1" is the biggest and keys
    are reproducible), each with its centroid, prototypes and name."""
    groups = sorted(set(int(x) for x in labels), key=lambda c: (-int((labels == c).sum()), c))
    remap = {old: new for new, old in enumerate(groups)}
    labels = np.array([remap[int(x)] for x in labels], dtype=np.int64)
    topics = []
    for c, old in enumerate(groups):
        members = matrix[labels == c]
        inside = [texts[i] for i in range(len(texts)) if labels[i] == c]
        outside = [texts[i] for i in range(len(texts)) if labels[i] != c]
        prototypes = topic_points(members, seed)
        topics.append(
            Topic(
                key=f"t{c + 1}" if names is None else names[old],
                name=topic_name(inside, outside) if names is None else names[old],
                centroid=tuple(float(x) for x in _unit(members.sum(axis=0)[None, :])[0]),
                size=len(inside),
                prototypes=tuple(tuple(float(x) for x in p) for p in prototypes),
            )
        )
    temperature = placement_temperature(matrix, labels, _closest(matrix, topics), prototypes=True, seed=seed)
    return TopicFit(TopicModel(topics, temperature, source), [int(x) for x in labels])


def match_topics(new: TopicModel, old: TopicModel | None) -> TopicModel:
    """``new`` with each topic given the key and name of the earlier topic closest to it
    (cosine >= MATCH_COSINE, one-to-one, closest pairs first); unmatched topics get fresh
    keys after the earlier ones'. Tags keep their own keys."""
    if old is None or not old.topics or not new.topics or new.source == "tags":
        return new
    similarity = new.centroids() @ old.centroids().T
    pairs = sorted(
        ((float(similarity[i, j]), i, j) for i in range(len(new.topics)) for j in range(len(old.topics))), reverse=True
    )
    taken_new: dict[int, int] = {}
    taken_old: set[int] = set()
    for score, i, j in pairs:
        if score < MATCH_COSINE:
            break
        if i not in taken_new and j not in taken_old:
            taken_new[i] = j
            taken_old.add(j)
    used = {t.key for t in old.topics}
    counter = 1
    topics = []
    for i, topic in enumerate(new.topics):
        if i in taken_new:
            earlier = old.topics[taken_new[i]]
            topics.append(replace(topic, key=earlier.key, name=earlier.name))
            continue
        while f"t{counter}" in used:
            counter += 1
        used.add(f"t{counter}")
        topics.append(replace(topic, key=f"t{counter}"))
    return replace(new, topics=topics)
