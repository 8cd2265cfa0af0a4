"""A small world of sources, runs, scores, responses and questions for dashboard tests.

The accounts and their logged-in clients (analyst_client, curator_client) come from tests/conftest.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.models import ReliabilityScore
from sources.models import Source
from tests.dashboard.helpers import World, make_run
from tests.factories import (
    DocumentFactory,
    FactQueryFactory,
    QueryCollectionFactory,
    QuestionFactory,
    SourceFactory,
    VoteFactory,
)


@pytest.fixture
def world(db: Any) -> World:
    sources = [SourceFactory(name=f"src-{i}") for i in range(4)]
    for s in sources:
        DocumentFactory.create_batch(2, source=s)
    qs = QueryCollectionFactory(name="facts")
    queries = [FactQueryFactory(query_set=qs, question=f"Question {i}?") for i in range(3)]
    # Sources 0 and 1 always agree; 2 and 3 collude on a different answer for query 0.
    answers: dict[tuple[int, int], str | None] = {
        (0, 0): "paris",
        (0, 1): "paris",
        (0, 2): "lyon",
        (0, 3): "lyon",
        (1, 0): "blue",
        (1, 1): "blue",
        (1, 2): "blue",
        (1, 3): None,
        (2, 0): "4",
        (2, 1): "4",
        (2, 2): "5",
        (2, 3): "5",
    }
    now = timezone.now()
    first = make_run(sources, queries, qs, answers, when=now - timedelta(days=2))
    second = make_run(sources, queries, qs, answers, when=now - timedelta(days=1), shift=0.05)
    for s, score in zip(sources, ReliabilityScore.objects.filter(run=second).order_by("source__name"), strict=True):
        Source.objects.filter(pk=s.pk).update(
            reliability=score.reliability,
            reliability_low=score.low,
            reliability_high=score.high,
            reliability_answers=score.answers,
        )
    question = QuestionFactory(
        text="What is the capital?",
        strategy="ra-rag",
        answer="paris",
        confidence=0.7,
        backend="extractive",
        clusters=[
            {"id": 0, "label": "paris", "members": [sources[0].pk, sources[1].pk], "weight": 2.2},
            {"id": 1, "label": "lyon", "members": [sources[2].pk], "weight": 1.4},
        ],
        answered_at=now,
    )
    for rank, (s, resp, cl) in enumerate(
        [
            (sources[0], "paris", 0),
            (sources[1], "paris", 0),
            (sources[2], "lyon", 1),
            (sources[3], "I don't know", None),
        ]
    ):
        VoteFactory(
            question=question,
            source=s,
            rank=rank,
            response=resp,
            cluster=cl,
            weight=1.1 if cl == 0 else (1.4 if cl == 1 else 0.0),
            reliability=0.6,
            filtered=cl is None,
            align_score=0.05 if cl is None else 0.9,
            passages=[
                {
                    "chunk_id": 1,
                    "document_id": 1,
                    "title": "Doc",
                    "url": "https://example.org/doc",
                    "text": "Paris is the capital.",
                    "distance": 0.2,
                }
            ],
        )
    return World(sources=sources, query_set=qs, queries=queries, runs=[first, second], question=question)
