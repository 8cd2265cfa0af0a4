"""Topics: what the questions are about, found from the questions themselves.

A source's reliability can depend on the subject (a vendor is right about its own products,
a sports desk about results); per-topic reliability (core.engine.reliability.topical) needs
the questions grouped into a handful of topics a person can read. This module:

- **finds** them (`find_topics`): a curator's tags where most queries carry one, else
  spherical k-means over the queries' embeddings, the number of topics chosen by silhouette
  (one topic when no split is clearly better than none);
- **names** each from its queries: the words most particular to it (`topic_name`);
- **assigns** a question softly (`TopicModel.membership`): a softmax of its cosine to each
  topic's centroid, with a temperature fitted so the discovery queries sit about
  TARGET_CONFIDENCE in their own topic (a question between two topics is weighed by both);
- keeps them **stable across runs** (`match_topics`): a new run's topic takes the key and
  name of the earlier topic whose centroid it is closest to (cosine at least MATCH_COSINE),
  so a curator's rename survives re-estimation.

The module is pure numpy; no database, no model (the caller encodes the texts).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
TARGET_CONFIDENCE = 0.8  # mean membership of a discovery query in its own topic
MATCH_COSINE = 0.8  # a new topic keeps an earlier topic's key and name at this centroid cosine
KMEANS_RESTARTS = 4
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

    def points(self) -> tuple[tuple[float, ...], ...]:
        return self.prototypes or (self.centroid,)


@dataclass(frozen=True)
class TopicModel:
    """Topics with their centroids and the softmax temperature that assigns a question."""

    topics: list[Topic]
    temperature: float = 0.05
    source: str = "clusters"  # "clusters", "tags" or "single"

    @property
    def keys(self) -> list[str]:
        return [t.key for t in self.topics]

    def centroids(self) -> FloatMatrix:
        return np.array([t.centroid for t in self.topics], dtype=np.float64).reshape(len(self.topics), -1)

    def membership(
        self,
        vectors: Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]] | Sequence[npt.NDArray[np.floating[Any]]],
    ) -> FloatMatrix:
        """Per vector, a distribution over the topics (rows sum to 1): a softmax over the
        topics of each one's closest prototype (a topic with more prototypes gets no more
        weight for it)."""
        matrix = _unit(np.asarray(vectors, dtype=np.float64).reshape(len(vectors), -1))
        if len(self.topics) <= 1:
            return np.ones((matrix.shape[0], len(self.topics)))
        return _softmax(_closest(matrix, self.topics) / max(self.temperature, 1e-6))

    def as_dict(self) -> JSONObject:
        return {
            "source": self.source,
            "temperature": self.temperature,
            "topics": [
                {
                    "key": t.key,
                    "name": t.name,
                    "size": t.size,
                    "centroid": [round(x, 6) for x in t.centroid],
                    "prototypes": [[round(x, 6) for x in p] for p in t.prototypes],
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
            )
            for t in data.get("topics", [])  # type: ignore[attr-defined]  # stored by as_dict: a list of dicts
        ]
        return cls(topics, float(data.get("temperature", 0.05)), str(data.get("source", "clusters")))  # type: ignore[arg-type]  # as_dict wrote a float


@dataclass
class TopicFit:
    """A discovery's outcome: the model, each discovery query's topic index, the silhouette."""

    model: TopicModel
    labels: list[int]
    silhouette: float = 0.0
    tried: dict[int, float] = field(default_factory=dict)  # k -> silhouette


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


def spherical_kmeans(vectors: FloatMatrix, k: int, seed: int = 0) -> tuple[npt.NDArray[np.int64], FloatMatrix]:
    """k-means on the unit sphere (cosine), k-means++ seeding, the best of a few restarts."""
    rng = np.random.default_rng(seed)
    n = vectors.shape[0]
    best: tuple[float, npt.NDArray[np.int64], FloatMatrix] | None = None
    for _ in range(KMEANS_RESTARTS):
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


def fit_temperature(vectors: FloatMatrix, topics: Sequence[Topic], labels: npt.NDArray[np.int64]) -> float:
    """The softmax temperature at which the discovery queries' membership in their own topic
    is TARGET_CONFIDENCE on average, each topic counting equally (a small topic's queries are
    not drowned by a large one's; bisection on a log scale)."""
    scores = _closest(vectors, topics)
    groups = [labels == t for t in range(len(topics)) if (labels == t).any()]
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


PROTOTYPE_QUERIES = 6  # a topic gets one prototype per this many of its queries ...
MAX_PROTOTYPES = 6  # ... up to this many


def find_topics(
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]] | Sequence[npt.NDArray[np.floating[Any]]],
    tags: Sequence[str | None] | None = None,
    *,
    max_topics: int = MAX_TOPICS,
    seed: int = 0,
) -> TopicFit:
    """Topics of ``texts`` (encoded as ``vectors``): the tags when at least MIN_TAGGED_SHARE
    of them carry one (and there are two or more), else clusters chosen by silhouette; a
    single topic when neither splits them."""
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
        return _fit(texts, matrix, labels, source="tags", names=distinct, seed=seed)
    space = matrix
    floor = max(MIN_TOPIC_QUERIES, int(np.ceil(MIN_TOPIC_SHARE * n)))
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
        single = Topic("t1", "all questions", tuple(float(x) for x in _unit(matrix.sum(axis=0)[None, :])[0]), n)
        return TopicFit(TopicModel([single], source="single"), [0] * n, 0.0, tried)
    fit = _fit(texts, matrix, best[1], source="clusters", seed=seed)
    fit.silhouette, fit.tried = best[0], tried
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
        n_proto = min(MAX_PROTOTYPES, max(1, len(inside) // PROTOTYPE_QUERIES))
        prototypes = spherical_kmeans(members, n_proto, seed)[1] if n_proto > 1 else _unit(members.sum(axis=0)[None, :])
        topics.append(
            Topic(
                key=f"t{c + 1}" if names is None else names[old],
                name=topic_name(inside, outside) if names is None else names[old],
                centroid=tuple(float(x) for x in _unit(members.sum(axis=0)[None, :])[0]),
                size=len(inside),
                prototypes=tuple(tuple(float(x) for x in p) for p in prototypes),
            )
        )
    temperature = fit_temperature(matrix, topics, labels)
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
            topics.append(Topic(earlier.key, earlier.name, topic.centroid, topic.size, topic.prototypes))
            continue
        while f"t{counter}" in used:
            counter += 1
        used.add(f"t{counter}")
        topics.append(Topic(f"t{counter}", topic.name, topic.centroid, topic.size, topic.prototypes))
    return TopicModel(topics, new.temperature, new.source)
