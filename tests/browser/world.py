"""A demo-like world for the layout and accessibility checks: every dashboard page has
something to show (and something awkward: long unbroken words and URLs, many columns).

Built from the model factories and, for the claims, the product's own claim-level
estimation (in-process, no worker needed): five sources (three reliable, two colluding),
their documents, a query set with reference answers, two finished estimation runs with
responses, scores and a copier pair, two answered questions with votes, clusters and
passages, claims about the same facts with a finished claims run, and jobs of every kind
(one failed with a traceback). ``build_world`` returns the path of every page to check.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from core.engine.reliability.identify import NOT_IDENTIFIED_MESSAGE
from core.models import EstimationRun, ReliabilityScore
from sources.models import Claim, Source
from tasks.models import Job
from tests.factories import (
    ChunkFactory,
    ClaimFactory,
    DocumentFactory,
    EstimationRunFactory,
    FactQueryFactory,
    JobFactory,
    QueryCollectionFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    RunAnswerFactory,
    RunResponseFactory,
    SourceDependenceFactory,
    SourceFactory,
    VoteFactory,
)

SOURCES = [  # name, kind, reliable?
    ("encyclopedia", Source.Kind.REFERENCE, True),
    ("almanac", Source.Kind.REFERENCE, True),
    ("gazette", Source.Kind.NEWS, True),
    ("rumour-mill", Source.Kind.SOCIAL, False),
    ("echo-blog-with-a-rather-long-name", Source.Kind.SOCIAL, False),
]
# question, reference answer, the colluding sources' answer
FACTS = [
    ("Who wrote the novel Dracula?", "Bram Stoker", "Mary Shelley"),
    ("In which city is the Eiffel Tower located?", "Paris", "Lyon"),
    ("How high is Mount Everest in metres?", "8849", "7200"),
]
# The URL names build_world's pages cover (the phone check asserts that every page of
# core/urls.py and tasks/urls.py is among them, or is a fragment or an action).
PAGE_NAMES = (
    "ask",
    "glossary",
    "history",
    "question-detail",
    "source-list",
    "source-detail",
    "source-claims",
    "claim-list",
    "claim-subject",
    "claim-conflict",
    "run-list",
    "run-detail",
    "run-checks",
    "conflicts",
    "job-list",
    "job-detail",
    "document-detail",
    "source-documents",
)
LONG_WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3
LONG_URL = "https://archive.example.org/" + "very-long-path-segment-without-any-break-" * 4 + "index.html"


def _run(sources: list[Source], queries: list[Any], query_set: Any, *, days_ago: int, shift: float, user: Any) -> Any:
    """A finished full run: reliable sources give the reference answer, the two others the
    colluding one (the last source says "I don't know" to the last query)."""
    when = timezone.now() - timedelta(days=days_ago)
    job = JobFactory(
        kind=Job.Kind.ESTIMATE,
        state=Job.State.SUCCEEDED,
        progress_current=15,
        progress_total=15,
        message="Estimated the reliability of 5 sources over 3 queries",
        log=["dispatched 1 batch(es) for 15 missing response(s)", "15 of 15 responses stored", "estimated"],
        result={"run_id": 0, "sources": 5, "queries": 3, "iterations": 4, "converged": True},
        created_by=user,
    )
    run = EstimationRunFactory(
        succeeded=True,
        query_set=query_set,
        sources=sources,
        finished_at=when,
        created_by=user,
        job=job,
        params={"k": 3, "tau": 0.1, "alpha": 1.0, "beta": 1.0, "estimator": "accucopy", "strict": False},
        gold_queries=[q.pk for q in queries],
    )
    EstimationRun.objects.filter(pk=run.pk).update(created_at=when)
    for qi, (query, (_, truth, rumour)) in enumerate(zip(queries, FACTS, strict=True)):
        RunAnswerFactory(run=run, query=query, answer=truth, cluster=0, support=2.6)
        for si, (source, (_, _, reliable)) in enumerate(zip(sources, SOURCES, strict=True)):
            idk = si == len(sources) - 1 and qi == len(queries) - 1
            said = "I don't know" if idk else (truth if reliable else rumour)
            RunResponseFactory(
                run=run,
                query=query,
                source=source,
                response=said,
                raw_response=f"According to our records, {said}.",
                is_idk=idk,
                cluster=None if idk else (0 if reliable else 1),
                agrees=None if idk else reliable,
                align_score=0.05 if idk else 0.82,
            )
    # Reliability by topic (issue 39): two topics, one with a long name; the first source is
    # reliable on the first topic only.
    topic_names = ["sport · results", "a topic with a long name about films, television and music"]
    EstimationRun.objects.filter(pk=run.pk).update(
        topics={
            "model": {
                "source": "clusters",
                "temperature": 0.05,
                "topics": [
                    {"key": f"t{i + 1}", "name": name, "size": 2, "centroid": [1.0, 0.0], "prototypes": []}
                    for i, name in enumerate(topic_names)
                ],
            },
            "cells": {
                str(source.pk): [
                    {
                        "key": f"t{t + 1}",
                        "accuracy": (0.9 if (reliable and not (si == 0 and t == 1)) else 0.2),
                        "low": 0.1,
                        "high": 0.97,
                        "answers": 2,
                    }
                    for t in range(2)
                ]
                for si, (source, (_, _, reliable)) in enumerate(zip(sources, SOURCES, strict=True))
            },
            "queries": {},
            "unsettled": [],
        }
    )
    for si, (source, (_, _, reliable)) in enumerate(zip(sources, SOURCES, strict=True)):
        r = min(0.97, (0.82 if reliable else 0.21) + shift + 0.02 * si)
        ReliabilityScoreFactory(
            run=run,
            source=source,
            reliability=r,
            weight=r * 3,
            answers=3,
            agreements=3 if reliable else 0,
            gold_answers=3,
            gold_agreements=3 if reliable else 0,
        )
    SourceDependenceFactory(
        run=run,
        source_a=sources[3],
        source_b=sources[4],
        probability=0.93,
        shared=3,
        same_true=0.0,
        same_false=3.0,
        different=0,
        examples=[
            {"query_id": q.pk, "query": q.question, "answer": rumour}
            for q, (_, _, rumour) in zip(queries, FACTS, strict=True)
        ],
    )
    return run


def _question(sources: list[Source], user: Any, text: str, answer: str, wrong: str, documents: dict[int, Any]) -> Any:
    job = JobFactory(
        kind=Job.Kind.ASK,
        state=Job.State.SUCCEEDED,
        progress_current=2,
        progress_total=2,
        message="Answered",
        created_by=user,
    )
    question = QuestionFactory(
        text=text,
        strategy="ra-rag",
        params={"kappa": 5},
        answer=answer,
        confidence=0.81,
        backend="extractive",
        calls=5,
        tokens=2500,
        seconds=1.4,
        clusters=[
            {"id": 0, "label": answer, "members": [s.pk for s in sources[:3]], "weight": 2.6},
            {"id": 1, "label": wrong, "members": [s.pk for s in sources[3:]], "weight": 0.6},
        ],
        notes=["Two low-reliability sources gave another answer."],
        answered_at=timezone.now(),
        asked_by=user,
        job=job,
    )
    for rank, (source, (_, _, reliable)) in enumerate(zip(sources, SOURCES, strict=True)):
        doc = documents[source.pk]
        VoteFactory(
            question=question,
            source=source,
            rank=rank,
            response=answer if reliable else wrong,
            raw_response=f"{answer if reliable else wrong}, according to the passage",
            cluster=0 if reliable else 1,
            weight=(0.85 if reliable else 0.3),
            reliability=0.85 if reliable else 0.25,
            align_score=0.9 if reliable else 0.6,
            passages=[
                {
                    "chunk_id": doc.chunks.first().pk,
                    "document_id": doc.pk,
                    "title": doc.title,
                    "url": doc.url,
                    "text": doc.text,
                    "distance": 0.21,
                }
            ],
        )
    return question


def _claims(sources: list[Source], user: Any) -> Any:
    """Claims about the same facts and a finished claims run, resolved by the product."""
    from core.services.estimation.claim_runs import run_claim_estimation

    for source, (_, _, reliable) in zip(sources, SOURCES, strict=True):
        facts = {
            ("Dracula", "author"): "Bram Stoker" if reliable else "Mary Shelley",
            ("Dracula", "published"): "1897",
            ("Eiffel Tower", "city"): "Paris" if reliable else "Lyon",
            ("Eiffel Tower", "completed"): "1889",
            ("Mount Everest", "height"): "8849" if reliable else "7200",
            (LONG_WORD[:120], "note"): LONG_WORD,
        }
        for (subject, attribute), value in facts.items():
            ClaimFactory(
                source=source,
                subject=subject,
                attribute=attribute,
                value=value,
                method=Claim.Method.MAPPING,
                provenance={"file": f"{source.name}.csv", "line": 2},
            )
    run = EstimationRunFactory(
        kind=EstimationRun.Kind.CLAIMS,
        query_set=None,
        sources=sources,
        params={"estimator": "accucopy", "attributes": None},
        created_by=user,
        job=JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.SUCCEEDED, message="Resolved 6 items", created_by=user),
    )
    run_claim_estimation(run)
    return run


def build_world(analyst: Any, curator: Any) -> dict[str, str]:
    """Create the world; returns {page name: path} for every dashboard page."""
    sources = []
    documents: dict[int, Any] = {}
    long_documents: dict[int, Any] = {}  # each source's document of long unbroken words
    for name, kind, reliable in SOURCES:
        source = SourceFactory(
            name=name, kind=kind, homepage=f"https://{name}.example.org/", description=f"A {kind} source."
        )
        sources.append(source)
        for index, (question, truth, rumour) in enumerate(FACTS):
            text = f"{question} The answer is {truth if reliable else rumour}, as our records show."
            doc = DocumentFactory(
                source=source,
                title=f"{question.rstrip('?')} ({name})",
                text=text,
                url=f"https://{name}.example.org/facts/{index}",
            )
            ChunkFactory(document=doc, text=text)
            documents.setdefault(source.pk, doc)
        long_doc = DocumentFactory(source=source, title=LONG_WORD, text=f"{LONG_WORD} {LONG_URL}", url=LONG_URL)
        long_chunk = ChunkFactory(document=long_doc, text=long_doc.text)
        long_documents[source.pk] = long_doc
        Source.objects.filter(pk=source.pk).update(chunk_count=len(FACTS) + 1)

    claims_run = _claims(sources, curator)

    query_set = QueryCollectionFactory(name="demo", description="Browser test facts")
    queries = [FactQueryFactory(query_set=query_set, question=q, reference_answers=[a]) for q, a, _ in FACTS]
    # An older run that agreement did not settle: its checks page (curators).
    unsettled = _run(sources, queries, query_set, days_ago=3, shift=0.0, user=curator)
    reliable_ids = [s.pk for s, (_, _, reliable) in zip(sources, SOURCES, strict=True) if reliable]
    EstimationRun.objects.filter(pk=unsettled.pk).update(
        gold_queries=[],
        identification={
            "identified": False,
            "reason": NOT_IDENTIFIED_MESSAGE,
            "estimate_side": reliable_ids,
            "dissent_bloc": [s.pk for s in sources if s.pk not in reliable_ids],
            "contested": [q.pk for q in queries],
            "checks": [q.pk for q in queries],
            "agreement": [1.0, 1.0],
            "settled_by_gold": 0,
        },
    )
    _run(sources, queries, query_set, days_ago=2, shift=0.0, user=curator)
    run = _run(sources, queries, query_set, days_ago=1, shift=0.04, user=curator)
    for score in ReliabilityScore.objects.filter(run=run):
        Source.objects.filter(pk=score.source_id).update(
            reliability=score.reliability,
            reliability_low=score.low,
            reliability_high=score.high,
            reliability_answers=score.answers,
            reliability_updated_at=timezone.now(),
        )

    question = _question(sources, analyst, FACTS[0][0], "Bram Stoker", "Mary Shelley", documents)
    # Its answer is one long word, cited from the long documents (the marked sentence holds it and the URL).
    long_question = _question(
        sources, analyst, f"What does {LONG_WORD} mean? See {LONG_URL}", LONG_WORD[:45], "a volcano", long_documents
    )
    JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.SUCCEEDED,
        progress_current=4,
        progress_total=4,
        message="Ingested 4 documents into encyclopedia",
        log=[f"{LONG_URL}: 1 document"],
        result={"documents": 4, "chunks": 4, "files": [LONG_URL]},
        created_by=curator,
    )
    failed = JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.FAILED,
        message="The file could not be read",
        error="Traceback (most recent call last):\n  File " + LONG_URL + "\nValueError: " + LONG_WORD,
        created_by=curator,
    )
    item = {"subject": "Dracula", "attribute": "author"}
    return {
        "ask": reverse("ask"),
        "history": reverse("history"),
        "glossary": reverse("glossary"),
        "question-detail": reverse("question-detail", args=[question.pk]),
        "question-detail-long": reverse("question-detail", args=[long_question.pk]),
        "source-list": reverse("source-list"),
        "source-detail": reverse("source-detail", args=[sources[4].pk]),
        "source-claims": reverse("source-claims", args=[sources[3].pk]),
        "claim-list": reverse("claim-list"),
        "claim-subject": f"{reverse('claim-subject')}?{urlencode({'subject': 'Dracula'})}",
        "claim-conflict": f"{reverse('claim-conflict')}?{urlencode(item)}",
        "run-list": reverse("run-list"),
        "run-detail": reverse("run-detail", args=[run.pk]),
        "run-checks": reverse("run-checks", args=[unsettled.pk]),  # curators (analysts get the styled 403)
        "claims-run-detail": reverse("run-detail", args=[claims_run.pk]),
        "conflicts": reverse("conflicts"),
        "conflicts-claims": f"{reverse('conflicts')}?mode=claims",
        "document-detail": f"{reverse('document-detail', args=[long_doc.pk])}?chunk={long_chunk.pk}",
        "source-documents": f"{reverse('source-documents', args=[sources[0].pk])}?{urlencode({'q': 'Dracula'})}",
        "job-list": reverse("job-list"),
        "job-detail": reverse("job-detail", args=[failed.pk]),
        "run-job-detail": reverse("job-detail", args=[run.job_id]),
        "logout-confirm": reverse("logout"),  # GET asks before logging out
        "not-found": "/questions/987654321/",  # the styled 404 page, with the nav
    }
