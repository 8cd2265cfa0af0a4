"""Synthetic vectors for the retrieval-at-scale benchmark (scripts/bench_scale.py): a corpus
clustered like real embeddings, and its similarity profile against real all-MiniLM-L6-v2
embeddings of the shared data sets (--calibrate)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scratch_db

ROOT = Path(__file__).resolve().parent.parent.parent
DIM = 384


def unit(x: np.ndarray) -> np.ndarray:
    unit_rows: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    return unit_rows


class ClusteredCorpus:
    """Synthetic embeddings clustered the way text embeddings are.

    Ten domains, each topic in one domain, each topic with `facts_per_topic` facts. A vector is
    ``normalise(g·common + d·domain + a·topic + b·fact + e·U_topic z + iso·ε)``: a direction all
    texts share, its domain's and topic's centroids, its fact's point, low-rank noise in the
    topic's own 8-dimensional subspace (z Gaussian) and isotropic Gaussian noise ε. A source
    covers `topics_per_source` topics (Zipf-weighted, so a few dominate), each topic is covered
    by about `sources_per_topic` sources (sources overlap, as real ones report the same facts);
    a query is a fresh draw of a fact some source covers. The weights were fitted so that a
    5,000-vector corpus has the similarity profile of all-MiniLM-L6-v2 embeddings of 4,265 real
    passages and 800 questions (PoisonedRAG, RAMDocs): see --calibrate and docs/performance.md.
    """

    def __init__(
        self,
        n_sources: int,
        seed: int = 7,
        *,
        topics_per_source: int = 40,
        sources_per_topic: int = 8,
        facts_per_topic: int = 20,
        domains: int = 10,
        weights: dict[str, float] | None = None,
        rank: int = 8,
        dim: int = DIM,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.w = {"g": 0.15, "d": 0.8, "a": 0.7, "b": 1.0, "e": 1.1, "iso": 0.8, **(weights or {})}
        self.rank, self.dim, self.facts_per_topic = rank, dim, facts_per_topic
        n_topics = max(topics_per_source, n_sources * topics_per_source // sources_per_topic)
        rng = self.rng
        self.common = unit(rng.standard_normal(dim))
        self.domains = unit(rng.standard_normal((domains, dim)))
        self.topic_domain = rng.integers(0, domains, n_topics)
        self.topics = unit(rng.standard_normal((n_topics, dim)))
        self.bases = np.linalg.qr(rng.standard_normal((n_topics, dim, rank)).astype(np.float32))[0].astype(np.float32)
        self.facts = unit(rng.standard_normal((n_topics, facts_per_topic, dim)))
        self.source_topics = [rng.choice(n_topics, topics_per_source, replace=False) for _ in range(n_sources)]

    def _draw(self, topics: np.ndarray, facts: np.ndarray) -> np.ndarray:
        w, n = self.w, len(topics)
        z = self.rng.standard_normal((n, self.rank)).astype(np.float32) / np.sqrt(self.rank)
        low_rank = np.einsum("ndr,nr->nd", self.bases[topics], z)
        noise = self.rng.standard_normal((n, self.dim)).astype(np.float32) / np.sqrt(self.dim)
        return unit(
            w["g"] * self.common
            + w["d"] * self.domains[self.topic_domain[topics]]
            + w["a"] * self.topics[topics]
            + w["b"] * self.facts[topics, facts]
            + w["e"] * low_rank
            + w["iso"] * noise
        )

    def chunks(self, source: int, n: int) -> np.ndarray:
        mine = self.source_topics[source]
        zipf = 1.0 / np.arange(1, len(mine) + 1)
        topics = mine[self.rng.choice(len(mine), n, p=zipf / zipf.sum())]
        return self._draw(topics, self.rng.integers(0, self.facts_per_topic, n))

    def queries(self, n: int) -> np.ndarray:
        owners = self.rng.integers(0, len(self.source_topics), n)
        topics = np.array([self.source_topics[s][self.rng.integers(0, len(self.source_topics[s]))] for s in owners])
        return self._draw(topics, self.rng.integers(0, self.facts_per_topic, n))


def similarity_profile(passages: np.ndarray, questions: np.ndarray) -> dict[str, float]:
    """Medians of: question-to-passage similarity of the 1st, 3rd, 10th, 100th nearest and of
    all pairs; passage-to-passage of the 1st and 10th nearest; local intrinsic dimension
    around the questions (MLE over 20 neighbours); the gap between the 3rd and 4th nearest."""
    p, q = unit(passages), unit(questions)
    sims = q @ p.T
    ranked = -np.sort(-sims, axis=1)
    sample = p[:2000] @ p[:2000].T
    np.fill_diagonal(sample, -1)
    neighbours = -np.sort(-sample, axis=1)
    dist = np.maximum(np.sqrt(np.maximum(0, 2 - 2 * ranked[:, :20])), 1e-6)
    lid = -1 / np.mean(np.log(dist[:, :-1] / dist[:, -1:]), axis=1)
    return {
        "q_top1": float(np.median(ranked[:, 0])),
        "q_top3": float(np.median(ranked[:, 2])),
        "q_top10": float(np.median(ranked[:, 9])),
        "q_top100": float(np.median(ranked[:, 99])),
        "q_all": float(np.median(sims)),
        "p_nn1": float(np.median(neighbours[:, 0])),
        "p_nn10": float(np.median(neighbours[:, 9])),
        "lid_q": float(np.median(lid)),
        "gap_3_4": float(np.median(ranked[:, 2] - ranked[:, 3])),
    }


def calibrate() -> dict[str, dict[str, float] | int]:
    """The similarity profile of real embeddings (the shared data sets' passages and questions,
    all-MiniLM-L6-v2, cached in var/bench/cache) beside that of a synthetic source of the same size."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    django.setup()
    from bench_platform import load_texts

    from core.bench.embedding_cache import CachedEmbedder
    from runtime.backends import configured_embedder

    passages, questions = load_texts(10**9)
    embedder = CachedEmbedder(configured_embedder(), ROOT / "var" / "bench" / "cache")
    real = similarity_profile(embedder.encode(passages), embedder.encode(questions))
    corpus = ClusteredCorpus(1, seed=0)
    synthetic = similarity_profile(corpus.chunks(0, len(passages)), corpus.queries(len(questions)))
    return {"real": real, "synthetic": synthetic, "passages": len(passages), "questions": len(questions)}


def source_sizes(total: int, n_sources: int) -> list[int]:
    """A 4-chunk source, three small ones (searched exactly) and the rest big, varying ±25%."""
    small = [4, 300, 1500]
    even = (total - sum(small)) // (n_sources - len(small))
    return scratch_db.source_sizes(total, n_sources, small, swing=even // 4)
