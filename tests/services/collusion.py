"""A stored run in which a colluding majority repeats one wrong answer per query: two honest
sources, three colluders, ten fact-checking queries with well-separated right and wrong
answers. The responses are stored as a worker would have stored them; the tests finish the
run with the real clustering (the offline embedder's NLI) and the real estimators."""

from __future__ import annotations

from typing import Any

from core.models import EstimationRun, FactQuery
from sources.models import Source
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    QueryCollectionFactory,
    RunResponseFactory,
    SourceFactory,
)

FACTS = [
    ("What is the capital of France?", "Paris", "Lyon"),
    ("Who wrote Hamlet?", "William Shakespeare", "Christopher Marlowe"),
    ("What is the largest planet in the solar system?", "Jupiter", "Saturn"),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci", "Michelangelo"),
    ("What is the chemical symbol for gold?", "Au", "Ag"),
    ("Which ocean is the largest?", "Pacific", "Atlantic"),
    ("Who discovered penicillin?", "Alexander Fleming", "Louis Pasteur"),
    ("What is the tallest mountain on Earth?", "Mount Everest", "K2"),
    ("In which year did World War II end?", "1945", "1939"),
    ("What is the hardest natural substance?", "Diamond", "Quartz"),
]
HONEST = ("honest-a", "honest-b")
COLLUDERS = ("colluder-x", "colluder-y", "colluder-z")


def collusion_run(*, gold: int = 0, **params: Any) -> tuple[EstimationRun, list[FactQuery], dict[str, Source]]:
    """A running run over the colluding world whose first `gold` queries carry their reference
    answer, with every response stored (not yet estimated)."""
    query_set = QueryCollectionFactory(name="collusion")
    queries = [
        FactQueryFactory(query_set=query_set, question=q, reference_answers=[right] if i < gold else [])
        for i, (q, right, _) in enumerate(FACTS)
    ]
    sources = {name: SourceFactory(name=name, chunk_count=1) for name in (*HONEST, *COLLUDERS)}
    run = EstimationRunFactory(
        query_set=query_set,
        sources=list(sources.values()),
        state=EstimationRun.State.RUNNING,
        params={"alpha": 1.0, "beta": 1.0, "strict": False, **params},
    )
    for query, (_, right, wrong) in zip(queries, FACTS, strict=True):
        for name, source in sources.items():
            answer = right if name in HONEST else wrong
            RunResponseFactory(run=run, query=query, source=source, response=answer, cluster=None, agrees=None)
    return run, queries, sources
