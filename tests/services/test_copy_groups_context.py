"""The copy groups an answer counts once are those the sources list badges: the latest finished
run with copy detection, pairs with false answers in common, and none from an unsettled run
(issue 36)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core.engine.types import Embedder
from core.models import EstimationRun
from core.services.engine_context import build_context
from core.services.estimation import finish_run
from core.services.pages.copying import latest_copy_groups
from sources.models import Source
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    RunResponseFactory,
    SourceDependenceFactory,
    SourceFactory,
)
from tests.services.collusion import COLLUDERS, collusion_run


def finished_run(sources: list[Source], *, identified: bool = True) -> EstimationRun:
    """A finished accucopy run over ``sources``, in which they all answered one shared query."""
    run = EstimationRunFactory(
        succeeded=True,
        sources=sources,
        params={"estimator": "accucopy"},
        finished_at=timezone.now() - dt.timedelta(hours=1),
        identification={"identified": identified},
    )
    query = FactQueryFactory(query_set=run.query_set)
    for source in sources:
        RunResponseFactory(run=run, query=query, source=source)
    return run


def test_the_latest_runs_colluding_pairs_are_the_groups_counted_once(db: None) -> None:
    farm, trending, forum, wire, desk = (SourceFactory(name=n) for n in ("farm", "trending", "forum", "wire", "desk"))
    assert latest_copy_groups() == ()
    run = finished_run([farm, trending, forum, wire, desk])
    SourceDependenceFactory(run=run, source_a=farm, source_b=trending, probability=1.0, same_false=23.0)
    SourceDependenceFactory(run=run, source_a=forum, source_b=trending, probability=0.99, same_false=13.0)
    # Dependent on true answers alone, and unlikely dependent: neither is a copy group.
    SourceDependenceFactory(run=run, source_a=wire, source_b=desk, probability=0.9, same_false=0.2, same_true=9.0)
    SourceDependenceFactory(run=run, source_a=desk, source_b=farm, probability=0.2, same_false=5.0)
    assert latest_copy_groups() == (frozenset({farm.pk, trending.pk, forum.pk}),)


def test_an_unsettled_runs_pairs_are_not_counted_once(db: None) -> None:
    farm, trending = SourceFactory(name="farm"), SourceFactory(name="trending")
    run = finished_run([farm, trending], identified=False)
    SourceDependenceFactory(run=run, source_a=farm, source_b=trending, probability=1.0, same_false=23.0)
    assert latest_copy_groups() == ()


def test_a_finished_accucopy_runs_colluders_reach_the_answering_context(db: None, embedder: Embedder) -> None:
    # Three colluders repeat one wrong answer per query; three checks settle which group is right.
    run, _, sources = collusion_run(gold=3, estimator="accucopy")
    finish_run(run)
    colluders = frozenset(sources[name].pk for name in COLLUDERS)
    assert latest_copy_groups() == (colluders,)
    assert build_context().copy_groups == (colluders,)
