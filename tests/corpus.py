"""The stored data the tests share across areas: a tiny corpus of sources that agree and one
that holds misinformation, stored with the real embedder, with a matching fact-checking query
set; and a departures file with its claim mapping for MultiRAG."""

from __future__ import annotations

from typing import Any

from core.engine.claims.mapping import ClaimMapping
from core.models import QueryCollection
from sources.ingest.base import ParsedDocument
from sources.models import Source
from sources.services import FileOutcome, store_documents
from tests.factories import FactQueryFactory, QueryCollectionFactory, SourceFactory

FACTS = [
    ("What is the capital of France?", "Paris", "The capital of France is Paris.", "The capital of France is Lyon."),
    (
        "Who wrote Hamlet?",
        "William Shakespeare",
        "Hamlet was written by William Shakespeare.",
        "Hamlet was written by Christopher Marlowe.",
    ),
    (
        "What is the largest planet in the solar system?",
        "Jupiter",
        "The largest planet in the solar system is Jupiter.",
        "The largest planet in the solar system is Saturn.",
    ),
    (
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci",
        "The Mona Lisa was painted by Leonardo da Vinci.",
        "The Mona Lisa was painted by Michelangelo.",
    ),
    (
        "What is the chemical symbol for gold?",
        "Au",
        "The chemical symbol for gold is Au.",
        "The chemical symbol for gold is Ag.",
    ),
    (
        "Which ocean is the largest?",
        "Pacific Ocean",
        "The largest ocean on Earth is the Pacific Ocean.",
        "The largest ocean on Earth is the Atlantic Ocean.",
    ),
]


def store(source: Source, texts: list[str], embedder: Any) -> None:
    docs = [ParsedDocument(text=t, title=t[:40]) for t in texts]
    store_documents(source, docs, embedder, chunk_size=120, chunk_overlap=20, outcome=FileOutcome(name="test"))


def build_corpus(embedder: Any, reliable: int = 3) -> tuple[list[Source], Source, QueryCollection]:
    """`reliable` sources holding the facts, one source holding a wrong twin of each."""
    good = []
    for i in range(reliable):
        source = SourceFactory(name=f"reliable-{i}")
        store(source, [fact for _, _, fact, _ in FACTS], embedder)
        good.append(source)
    bad = SourceFactory(name="misinformer")
    store(bad, [wrong for _, _, _, wrong in FACTS], embedder)
    query_set = QueryCollectionFactory(name="demo")
    for question, answer, _, _ in FACTS:
        FactQueryFactory(query_set=query_set, question=question, reference_answers=[answer])
    return good, bad, query_set


# A departures file for MultiRAG: three sites agree on UA-10 (spelling the times differently),
# one rumour site does not.
DEPARTURES_MAPPING = ClaimMapping.from_json(
    {
        "subject": "flight",
        "source": "site",
        "attributes": {
            "actual departure time": {"field": "dep", "normalizer": "time"},
            "actual arrival time": {"field": "arr", "normalizer": "time"},
        },
    }
)
DEPARTURES_CSV = (
    b"site,flight,dep,arr\n"
    b"airline,UA-10-SFO-JFK,7:10 a.m.,3:40 p.m.\n"
    b"airport,UA-10-SFO-JFK,07:10,3:40 p.m.\n"
    b"tracker,UA-10-SFO-JFK,7:10 AM,3:41 p.m.\n"
    b"rumours,UA-10-SFO-JFK,9:45 p.m.,11:00 p.m.\n"
)
