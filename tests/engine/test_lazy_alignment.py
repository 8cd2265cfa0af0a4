"""The alignment filter's lazy mode (align_many(lazy=True), used by κ-RRSS): decisions taken
from the offline NLI's similarity bounds are the decisions of the exact scores, the exact
scores are settled afterwards in one batch, and RA-RAG's answers do not change, with fewer
calls to the embedding model."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.alignment import align_many
from core.engine.steps.clustering import cluster_answers, unsettled_texts
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, SourceVote, get_strategy
from core.engine.strategies.base import Answering
from core.engine.strategies.pipeline import answer_sources
from core.engine.strategies.ra_rag import RaRag, SourceVotingParams
from core.engine.text import IDK
from core.engine.types import Passage, SourceInfo
from tests.fakes import HashEmbedder, ScriptedGenerator

WORDS = [
    "paris",
    "london",
    "berlin",
    "capital",
    "france",
    "germany",
    "england",
    "city",
    "river",
    "seine",
    "thames",
    "rhine",
    "largest",
    "oldest",
    "population",
    "founded",
    "roman",
    "empire",
    "bridge",
    "tower",
    "museum",
]


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(low, high)))


@pytest.mark.parametrize("tau", [0.05, 0.1, 0.3])
def test_lazy_decisions_are_the_exact_ones_and_need_fewer_encodings(tau: float) -> None:
    rng = random.Random(int(tau * 100))
    decided_without_model = needed_model = filtered = kept = 0
    for _ in range(150):
        question = f"what is the {_sentence(rng, 2, 4)}"
        answers = [rng.choice([IDK, rng.choice(WORDS), _sentence(rng, 2, 3)]) for _ in range(4)]
        passages = [[_sentence(rng, 2, 12) for _ in range(3)] for _ in answers]
        eager_embedder, lazy_embedder = HashEmbedder(), HashEmbedder()
        eager = align_many(question, answers, passages, EmbeddingLexicalNLI(eager_embedder), tau)
        lazy = align_many(question, answers, passages, EmbeddingLexicalNLI(lazy_embedder), tau, lazy=True)
        for e, lz in zip(eager, lazy, strict=True):
            assert (lz.response, lz.filtered, lz.declarative) == (e.response, e.filtered, e.declarative)
            if lz.exact:
                assert lz.score == pytest.approx(e.score)
            else:
                assert lz.score <= e.score + 1e-12  # the bound that decided it
            filtered += e.filtered
            kept += e.response != IDK
        assert lazy_embedder.calls <= eager_embedder.calls
        if lazy_embedder.calls == 0 and eager_embedder.calls:
            decided_without_model += 1
        needed_model += lazy_embedder.calls > 0
    # Both paths were exercised, and both outcomes.
    assert decided_without_model > 0 and needed_model > 0 and filtered > 0 and kept > 0


def _context(rng: random.Random, n_sources: int) -> tuple[EngineContext, HashEmbedder]:
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    sources = []
    for sid in range(n_sources):
        texts = [
            f"{_sentence(rng, 1, 6)} answer: {rng.choice(WORDS[:6])} {_sentence(rng, 0, 6)}"
            if rng.random() < 0.7
            else _sentence(rng, 3, 10)
            for _ in range(3)
        ]
        retriever.add_texts(sid, texts, embedder)
        accuracy = rng.uniform(0.2, 0.95)
        sources.append(
            SourceInfo(sid, f"source {sid}", weight=accuracy * n_sources - 1, answers_count=20, accuracy=accuracy)
        )
    return EngineContext(retriever, embedder, ScriptedGenerator(), EmbeddingLexicalNLI(embedder), sources), embedder


def _summary(result: Any) -> tuple[Any, ...]:
    votes = [(v.source_id, v.response, v.filtered, round(v.align_score, 9), v.cluster) for v in result.votes]
    clusters = [(c.label, tuple(c.members), round(c.weight, 9)) for c in result.clusters]
    return result.answer, round(result.confidence, 9), votes, clusters, result.trace["visited"]


def _eager(strategy: RaRag) -> RaRag:
    """The same κ-RRSS strategy with each batch filtered on exact scores, encoding ahead once
    per batch, and nothing left to settle: the reference the lazy filter must match."""

    class Eager(type(strategy)):  # type: ignore[misc]
        def answer_batch(
            self,
            run: Answering,
            batch: Sequence[SourceInfo],
            passages: Mapping[int, list[Passage]],
            params: SourceVotingParams,
        ) -> list[SourceVote]:
            return answer_sources(
                run.question, run.ctx, batch, passages, run.stats, params.tau, self.use_filter, lazy=False
            )

        def settle(self, run: Answering, votes: list[SourceVote]) -> None:
            return None

    return Eager()


@pytest.mark.parametrize(("name", "tau"), [("ra-rag", 0.1), ("ra-rag", 0.2), ("ra-rag-nofilter", 0.1)])
def test_ra_rag_answers_as_with_the_eager_filter_with_fewer_model_calls(name: str, tau: float) -> None:
    strategy = get_strategy(name)
    assert isinstance(strategy, RaRag)
    eager = _eager(strategy)
    params = parse_params(strategy.Params, {"kappa": 3, "tau": tau})
    lazy_calls = eager_calls = 0
    for seed in range(40):
        question = f"what is the {_sentence(random.Random(seed), 2, 3)}"
        ctx, embedder = _context(random.Random(seed), 7)
        lazy = strategy.answer(question, ctx, params)
        lazy_calls += embedder.calls
        ctx, embedder = _context(random.Random(seed), 7)
        reference = eager.answer(question, ctx, params)
        eager_calls += embedder.calls
        assert _summary(lazy) == _summary(reference)
    assert lazy_calls < eager_calls


class ModelOnlyNLI:
    """The offline NLI without its bounds: every pair goes through the model (the old path)."""

    def __init__(self, nli: EmbeddingLexicalNLI) -> None:
        self.nli, self.name = nli, nli.name
        self.requires_answer_grounding = nli.requires_answer_grounding

    def predict(self, pairs: Any) -> Any:
        return self.nli.predict(pairs)


def test_clustering_settles_pairs_from_the_bounds_and_clusters_as_with_the_model() -> None:
    rng = random.Random(3)
    settled_without_model = needed_model = merged = 0
    for _ in range(150):
        question = f"which {_sentence(rng, 2, 4)}"
        answers = [rng.choice([IDK, rng.choice(WORDS), _sentence(rng, 1, 3)]) for _ in range(5)]
        reference_embedder, embedder = HashEmbedder(), HashEmbedder()
        reference = cluster_answers(answers, ModelOnlyNLI(EmbeddingLexicalNLI(reference_embedder)), question=question)
        nli = EmbeddingLexicalNLI(embedder)
        unsettled = unsettled_texts(answers, nli, question)
        nli.prepare(unsettled)
        calls = embedder.calls
        lazy = cluster_answers(answers, nli, question=question)
        assert embedder.calls == calls  # what the bounds left open was encoded ahead
        assert (lazy.labels, lazy.representatives, lazy.members) == (
            reference.labels,
            reference.representatives,
            reference.members,
        )
        if reference_embedder.calls and not unsettled:
            settled_without_model += 1
        needed_model += bool(unsettled)
        merged += len(reference.members) < len({a for a in answers if a != IDK})
    assert settled_without_model > 0 and needed_model > 0 and merged > 0
