"""The dashboard tests' world: its shape (World) and a succeeded run built from a table of
answers (make_run); the fixture that builds it is `world` in tests/dashboard/conftest.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.models import EstimationRun, FactQuery, QueryCollection, Question
from sources.models import Source
from tests.factories import EstimationRunFactory, ReliabilityScoreFactory, RunAnswerFactory, RunResponseFactory


@dataclass
class World:
    sources: list[Source]
    query_set: QueryCollection
    queries: list[FactQuery]
    question: Question  # answered "paris" by two sources, "lyon" by one; one abstained
    runs: list[EstimationRun] = field(default_factory=list)


def make_run(
    world_sources: list[Source],
    queries: list[FactQuery],
    query_set: QueryCollection,
    answers: dict[tuple[int, int], str | None],
    *,
    when: Any,
    shift: float = 0.0,
) -> EstimationRun:
    """A succeeded run in which answers[(query index, source index)] is the response (None: IDK)."""
    run = EstimationRunFactory(succeeded=True, query_set=query_set, sources=world_sources, finished_at=when)
    EstimationRun.objects.filter(pk=run.pk).update(created_at=when)
    run.refresh_from_db()
    for qi, query in enumerate(queries):
        given = {si: answers.get((qi, si)) for si in range(len(world_sources))}
        labels = sorted({a for a in given.values() if a})
        counts = {label: sum(1 for a in given.values() if a == label) for label in labels}
        winner = max(labels, key=lambda label: counts[label]) if labels else ""
        RunAnswerFactory(
            run=run,
            query=query,
            answer=winner,
            cluster=labels.index(winner) if winner else None,
            support=counts.get(winner, 0),
        )
        for si, source in enumerate(world_sources):
            a = given[si]
            RunResponseFactory(
                run=run,
                query=query,
                source=source,
                response=a or "I don't know",
                is_idk=a is None,
                cluster=labels.index(a) if a else None,
                agrees=(a == winner) if a else None,
                align_score=0.8,
            )
    for si, source in enumerate(world_sources):
        mine = [answers.get((qi, si)) for qi in range(len(queries))]
        answered = [a for a in mine if a]
        r = min(1.0, max(0.0, 0.5 + 0.1 * si + shift))
        ReliabilityScoreFactory(
            run=run,
            source=source,
            reliability=r,
            weight=r * 2,
            answers=len(answered),
            agreements=len(answered) // 2,
        )
    return run
