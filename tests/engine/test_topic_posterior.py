"""A question's topics after reading its sources' answers (topical.answer_posterior), and the
question encoded once on ra-rag's answering path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.reliability.base import MISSING
from core.engine.reliability.topical import answer_posterior
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, get_strategy
from core.engine.topics import find_topics
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

# Two topics, six sources: 0-2 right on topic 0 and wrong on topic 1; 3-5 right everywhere.
CELLS = np.array([[0.9, 0.9, 0.9, 0.9, 0.9, 0.9], [0.15, 0.15, 0.15, 0.9, 0.9, 0.9]])
BETWEEN = np.array([[0.5, 0.5]])  # the text cannot tell


def test_a_question_between_two_topics_goes_where_its_answers_fit() -> None:
    # Sources 0-2 give one answer, 3-5 another: only topic 1 explains it (0-2 wrong there).
    split = np.array([[1, 1, 1, 0, 0, 0]])
    assert answer_posterior(BETWEEN, split, CELLS)[0, 1] > 0.9
    # All six agree: topic 0, where 0-2 are right, explains it better.
    agree = np.array([[0, 0, 0, 0, 0, 0]])
    assert answer_posterior(BETWEEN, agree, CELLS)[0, 0] > 0.75
    # The text's lean is kept in the mix: a question the text places in topic 0 moves less.
    leaning = answer_posterior(np.array([[0.9, 0.1]]), split, CELLS)[0, 1]
    assert answer_posterior(BETWEEN, split, CELLS)[0, 1] > leaning > 0.5


def test_weak_evidence_leaves_the_text_prior() -> None:
    prior = np.array([[0.7, 0.3]])
    # One answer (the rest abstained): it cannot tell which topic the question is on.
    one = np.array([[1, MISSING, MISSING, MISSING, MISSING, MISSING]])
    assert np.allclose(answer_posterior(prior, one, CELLS), prior)
    # The sources that answered are as reliable on both topics: their disagreement says nothing.
    honest_split = np.array([[MISSING, MISSING, MISSING, 0, 0, 1]])
    assert np.allclose(answer_posterior(prior, honest_split, CELLS), prior)
    # Cells that differ only a little move the question a little (the tempered likelihood).
    close = np.array([[0.8, 0.8, 0.8, 0.8, 0.8, 0.8], [0.75, 0.75, 0.75, 0.8, 0.8, 0.8]])
    moved = answer_posterior(prior, np.array([[1, 1, 1, 0, 0, 0]]), close)
    assert abs(float(moved[0, 0]) - 0.7) < 0.1


class CountingEmbedder(HashEmbedder):
    """A HashEmbedder that keeps every batch it was asked to encode."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        self.batches.append(list(texts))
        return super().encode(texts, batch_size)


SPORT = [f"which team won the {y} football cup final match" for y in range(1990, 2010)]
MUSIC = [f"which singer recorded the {y} album song of the year" for y in range(1990, 2010)]


def test_ra_rag_encodes_the_question_once_with_topics() -> None:
    embedder = CountingEmbedder()
    question = "which team won the 2015 football cup final match"
    retriever = InMemoryRetriever()
    for sid, name in enumerate(["Alpha", "Beta", "Alpha"]):
        retriever.add_texts(sid, [f"{question} answer: {name}. {name} won it."], embedder)
    fit = find_topics(SPORT + MUSIC, embedder.encode(SPORT + MUSIC))
    assert len(fit.model.topics) == 2
    sources = [
        SourceInfo(i, f"s{i}", weight=1.0, answers_count=40, accuracy=0.8, topic_accuracy=(0.8, 0.8)) for i in range(3)
    ]
    ctx = EngineContext(
        retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources, topics=fit.model
    )
    embedder.batches.clear()
    chosen = get_strategy("ra-rag")
    result = chosen.answer_checked(question, ctx, parse_params(chosen.Params, {"kappa": 3, "min_relevance": 0.0}))
    assert "topic" in result.trace and "text_membership" in result.trace["topic"]  # type: ignore[operator]
    assert sum(batch.count(question) for batch in embedder.batches) == 1
