"""Helpers shared by the API tests: an answered question, a small query set, sources and a finished run."""

from __future__ import annotations

from core.models import EstimationRun, QueryCollection, Question
from tasks.models import Job
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    JobFactory,
    QueryCollectionFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    SourceFactory,
    VoteFactory,
)


def answered_question(text: str = "Where is the Eiffel Tower?", strategy: str = "ra-rag") -> Question:
    """Answered "Paris" (confidence 0.75): wiki voted for it, blog abstained."""
    question = QuestionFactory(
        answered=True,
        text=text,
        strategy=strategy,
        job=JobFactory(kind=Job.Kind.ASK, state=Job.State.SUCCEEDED),
        clusters=[{"id": 0, "label": "Paris", "members": [1], "weight": 1.5}],
    )
    passage = {
        "chunk_id": 1,
        "document_id": 2,
        "title": "Eiffel",
        "url": "",
        "text": "The tower is in Paris.",
        "distance": 0.12,
    }
    VoteFactory(question=question, source=SourceFactory(name="wiki"), rank=0, weight=1.5, passages=[passage])
    VoteFactory(
        question=question,
        source=SourceFactory(name="blog"),
        rank=1,
        response="I don't know",
        filtered=True,
        cluster=None,
        weight=0.0,
        align_score=0.02,
    )
    return question


def demo_query_set(n: int = 1) -> QueryCollection:
    """The query set "demo" with ``n`` queries ("Question?" when one, "Question 0?", ... else)."""
    query_set = QueryCollectionFactory(name="demo")
    for i in range(n):
        FactQueryFactory(query_set=query_set, question="Question?" if n == 1 else f"Question {i}?")
    return query_set


def three_sources() -> list[int]:
    """An estimation run needs at least three sources (reliability comes from agreement between them)."""
    return [SourceFactory(name=name, chunk_count=3).pk for name in ("wiki", "wire", "almanac")]


def finished_run(sources, reliabilities) -> EstimationRun:
    """A succeeded run (3 iterations, converged) scoring each source with its reliability +-0.1."""
    run = EstimationRunFactory(succeeded=True, query_set=None, sources=sources)
    for source, value in zip(sources, reliabilities, strict=True):
        ReliabilityScoreFactory(run=run, source=source, reliability=value, answers=8, agreements=6)
    return run
