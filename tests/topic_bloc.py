"""A stored run in which a bloc is the larger side on one topic only (issue 39): nine sources,
20 queries a curator tagged with four topics; sources 0-2 share a wrong answer on "science"
and "history" (a minority, settled by agreement), sources 0-5 on "capitals" (the larger side,
so only there does the estimate follow the bloc). The responses are stored as a worker would
have stored them and the run is finished with the real clustering and estimator."""

from __future__ import annotations

from core.models import EstimationRun, FactQuery
from core.services.estimation import finish_run
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    QueryCollectionFactory,
    RunResponseFactory,
    SourceFactory,
)

SCIENCE = [
    ("What is the boiling point of water at sea level in Celsius?", "100", "90"),
    ("Which planet is closest to the Sun?", "Mercury", "Venus"),
    ("What gas do plants absorb for photosynthesis?", "Carbon dioxide", "Nitrogen"),
    ("What is the chemical symbol for sodium?", "Na", "So"),
    ("How many bones are in the adult human body?", "206", "212"),
    ("Who proposed the theory of general relativity?", "Albert Einstein", "Isaac Newton"),
    ("Who first sailed around the world in an expedition?", "Ferdinand Magellan", "Vasco da Gama"),
    ("In which year did the Berlin Wall fall?", "1989", "1991"),
    ("Who was the first president of the United States?", "George Washington", "John Adams"),
    ("Which empire built Machu Picchu?", "Inca", "Aztec"),
]
PLACES = [
    ("What is the capital of Japan?", "Tokyo", "Kyoto"),
    ("What is the capital of Italy?", "Rome", "Milan"),
    ("What is the capital of Canada?", "Ottawa", "Toronto"),
    ("What is the capital of Kenya?", "Nairobi", "Mombasa"),
    ("What is the capital of Peru?", "Lima", "Cusco"),
    ("What is the capital of Norway?", "Oslo", "Bergen"),
    ("What is the capital of Egypt?", "Cairo", "Alexandria"),
    ("What is the capital of Chile?", "Santiago", "Valparaiso"),
    ("What is the capital of Greece?", "Athens", "Thessaloniki"),
    ("What is the capital of Poland?", "Warsaw", "Krakow"),
]
SOURCES = [f"source-{i}" for i in range(9)]
# Per topic (a curator's tag), its facts and the sources that give the shared wrong answer:
# sources 0-2 are a minority bloc on "science" and "history"; on "capitals" sources 0-5 are
# the larger side, so only there does the estimate follow the bloc.
TOPICS = {
    "science": (SCIENCE[:5], SOURCES[:3]),
    "history": (SCIENCE[5:], SOURCES[:3]),
    "europe": (PLACES[:5], []),
    "capitals": (PLACES[5:], SOURCES[:6]),
}


def topic_bloc_run() -> tuple[EstimationRun, dict[str, list[FactQuery]]]:
    """A finished run over the topics above (nine sources, 20 queries), from stored responses."""
    query_set = QueryCollectionFactory(name="four topics")
    sources = {name: SourceFactory(name=name, chunk_count=1) for name in SOURCES}
    run = EstimationRunFactory(
        query_set=query_set,
        sources=list(sources.values()),
        state=EstimationRun.State.RUNNING,
        params={"alpha": 1.0, "beta": 1.0, "strict": False},
    )
    queries: dict[str, list[FactQuery]] = {}
    for topic, (facts, wrong_ones) in TOPICS.items():
        for question, right, wrong in facts:
            query = FactQueryFactory(
                query_set=query_set, question=question, reference_answers=[], tags=[f"topic:{topic}"]
            )
            queries.setdefault(topic, []).append(query)
            for name, source in sources.items():
                RunResponseFactory(run=run, query=query, source=source, response=wrong if name in wrong_ones else right)
    finish_run(run)
    run.refresh_from_db()
    return run, queries
