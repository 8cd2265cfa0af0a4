"""Simulated sources of uneven reliability, following Appendix G of the RA-RAG paper.

Each source i has reliability p_i and coverage r_i. For every question, independently per
source: with probability r_i the source holds documents for it; then with probability p_i
they are factual (three drawn from the question's factual documents), otherwise they are
misinformation for one wrong answer (three of that answer's documents). Colluding sources
all push the data set's own incorrect answer (the official code); non-colluding ones draw
a wrong answer each (the paper's text).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.bench.datasets import BenchQuestion

DOCS_PER_HOLDING = 3
BETA_MEAN = 0.6
HONEST, ADVERSARIAL = 0.9, 0.1  # the hammer priors' two reliabilities
PRIORS = ("adversary-hammer", "beta", "topic-hammer")


@dataclass(frozen=True)
class SimSource:
    id: int
    name: str
    reliability: float  # p_i, the true probability of holding factual documents
    coverage: float  # r_i
    # topic-hammer: p_i on the questions of a topic, where it differs from ``reliability``
    by_topic: tuple[tuple[str, float], ...] = ()

    def reliability_on(self, topic: str) -> float:
        """p_i on a question of ``topic``."""
        return dict(self.by_topic).get(topic, self.reliability)


@dataclass(frozen=True)
class CorpusDoc:
    id: int
    source_id: int
    qid: str
    text: str
    kind: str  # "factual", "misinfo" or "noise"
    answer: str  # the answer the document supports ("" for noise)


@dataclass(frozen=True)
class Holding:
    """What one source holds for one question."""

    kind: str  # "none", "factual" or "misinfo"
    answer: str = ""


@dataclass
class Corpus:
    questions: list[BenchQuestion]
    sources: list[SimSource]
    documents: list[CorpusDoc]
    holdings: dict[tuple[int, str], Holding]
    estimation_ids: list[str]
    test_ids: list[str]
    config: dict[str, object] = field(default_factory=dict)

    def question(self, qid: str) -> BenchQuestion:
        return self._by_id[qid]

    def __post_init__(self) -> None:
        self._by_id = {q.qid: q for q in self.questions}

    @property
    def true_reliability(self) -> dict[int, float]:
        """p_i over the whole corpus: with topic-hammer, the mean over the questions' topics."""
        topics = [q.topic for q in self.questions]
        return {s.id: sum(s.reliability_on(t) for t in topics) / max(len(topics), 1) for s in self.sources}

    def reliability_for(self, qid: str) -> dict[int, float]:
        """p_i of every source on question ``qid`` (its topic's, under topic-hammer)."""
        topic = self.question(qid).topic
        return {s.id: s.reliability_on(topic) for s in self.sources}


def sample_reliabilities(
    prior: str, n_sources: int, adversaries: int, rng: np.random.Generator, mean: float = BETA_MEAN
) -> list[float]:
    """p_i from Beta(2w/(1-w), 2) (mean w) or the adversary-hammer prior (0.1 / 0.9); under
    topic-hammer every source's overall p_i is 0.9 (see topic_reliabilities)."""
    if prior == "topic-hammer":
        return [HONEST] * n_sources
    if prior == "beta":
        alpha = 2 * mean / (1 - mean)
        return [float(x) for x in rng.beta(alpha, 2.0, size=n_sources)]
    if prior == "adversary-hammer":
        if not 0 <= adversaries <= n_sources:
            raise ValueError("adversaries must be between 0 and the number of sources")
        return [ADVERSARIAL] * adversaries + [HONEST] * (n_sources - adversaries)
    raise ValueError(f"unknown prior {prior!r}")


def topic_reliabilities(
    adversaries: int, n_sources: int, topics: Sequence[str], rng: np.random.Generator
) -> list[tuple[tuple[str, float], ...]]:
    """topic-hammer: each of the first ``adversaries`` sources is adversarial (0.1) on the
    questions of one or two topics drawn by the seed (never all of them), and as reliable as
    an honest source (0.9) elsewhere; the others are honest everywhere."""
    if not 0 <= adversaries <= n_sources:
        raise ValueError("adversaries must be between 0 and the number of sources")
    if len(topics) < 2:
        raise ValueError("topic-hammer needs questions of two topics or more")
    out: list[tuple[tuple[str, float], ...]] = []
    for i in range(n_sources):
        if i >= adversaries:
            out.append(())
            continue
        count = int(rng.integers(1, min(2, len(topics) - 1) + 1))
        chosen = sorted(str(t) for t in rng.choice(sorted(topics), size=count, replace=False))
        out.append(tuple((t, ADVERSARIAL) for t in chosen))
    return out


def make_sources(
    prior: str,
    n_sources: int,
    adversaries: int,
    coverage: float | Sequence[float],
    seed: int,
    topics: Sequence[str] = (),
) -> list[SimSource]:
    rng = np.random.default_rng(seed)
    reliabilities = sample_reliabilities(prior, n_sources, adversaries, rng)
    by_topic = topic_reliabilities(adversaries, n_sources, topics, rng) if prior == "topic-hammer" else [()] * n_sources
    coverages = [float(coverage)] * n_sources if isinstance(coverage, int | float) else list(coverage)
    if len(coverages) != n_sources:
        raise ValueError("one coverage per source")
    return [
        SimSource(id=i + 1, name=f"source-{i + 1}", reliability=p, coverage=r, by_topic=by_topic[i])
        for i, (p, r) in enumerate(zip(reliabilities, coverages, strict=True))
    ]


def build_corpus(
    questions: Sequence[BenchQuestion],
    sources: Sequence[SimSource],
    seed: int,
    estimation_queries: int = 100,
    collude: bool = True,
    max_questions: int | None = None,
) -> Corpus:
    """Distribute the questions' documents to the sources; split estimation/test questions.

    The question order is shuffled by the seed, then the first ``estimation_queries`` are the
    fact-checking queries for reliability estimation and the rest are test questions.
    """
    rng = random.Random(seed)
    order = list(questions)
    rng.shuffle(order)
    if max_questions is not None:
        order = order[:max_questions]
    if estimation_queries >= len(order):
        raise ValueError(f"{estimation_queries} estimation queries leave no test question")

    documents: list[CorpusDoc] = []
    holdings: dict[tuple[int, str], Holding] = {}

    def add(source: SimSource, q: BenchQuestion, texts: Sequence[str], kind: str, answer: str) -> None:
        for text in texts:
            documents.append(CorpusDoc(len(documents) + 1, source.id, q.qid, text, kind, answer))

    for q in order:
        for source in sources:
            if rng.random() >= source.coverage:
                holdings[(source.id, q.qid)] = Holding("none")
                continue
            if rng.random() < source.reliability_on(q.topic):
                texts = rng.sample(q.factual_docs, min(DOCS_PER_HOLDING, len(q.factual_docs)))
                holdings[(source.id, q.qid)] = Holding("factual", q.gold[0])
                add(source, q, texts, "factual", q.gold[0])
            else:
                wrong = q.wrong_answers[0] if collude else rng.choice(q.wrong_answers)
                pool = q.misinfo_docs[wrong]
                texts = rng.sample(pool, min(DOCS_PER_HOLDING, len(pool)))
                holdings[(source.id, q.qid)] = Holding("misinfo", wrong)
                add(source, q, texts, "misinfo", wrong)
            # RAMDocs' noise documents are retrieval noise any holding source would also have.
            if q.noise_docs:
                add(source, q, [rng.choice(q.noise_docs)], "noise", "")

    ids = [q.qid for q in order]
    return Corpus(
        questions=order,
        sources=list(sources),
        documents=documents,
        holdings=holdings,
        estimation_ids=ids[:estimation_queries],
        test_ids=ids[estimation_queries:],
        config={"seed": seed, "collude": collude, "estimation_queries": estimation_queries},
    )
