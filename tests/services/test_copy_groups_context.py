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
from tests.topic_colluding import N, colluding_topical


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


def test_a_bloc_colluding_on_one_topic_reaches_the_context_as_that_topics_group(db: None) -> None:
    from dataclasses import replace

    from core.engine.topics import Topic, TopicModel
    from core.services.estimation.finish import stored_topics
    from core.services.topics import merge_topics

    sources = [SourceFactory(name=f"source {j}", chunk_count=1) for j in range(8)]
    # No verdict per topic here (identify_topics=False): every topic counts as settled.
    _, topical = colluding_topical((N, N + N // 2), identify_topics=False)
    model = TopicModel([Topic(k, k, tuple(float(i == t) for i in range(3)), 10) for t, k in enumerate("abc")])
    stored = stored_topics(replace(topical, model=model), [s.pk for s in sources])
    bloc = frozenset(s.pk for s in sources[:3])
    assert stored["copy_groups"] == {"a": [sorted(bloc)], "b": [], "c": []}
    run = finished_run(sources)
    run.topics = stored
    run.save(update_fields=["topics"])
    # The overall groups: the bloc, with an honest source wrongly joined to it.
    for a, b in ((0, 1), (1, 2), (2, 3)):
        SourceDependenceFactory(run=run, source_a=sources[a], source_b=sources[b], probability=1.0, same_false=9.0)
    overall = (frozenset(s.pk for s in sources[:4]),)
    ctx = build_context()
    assert ctx.copy_groups == overall
    assert ctx.topic_copy_groups == ((bloc,), (), ())
    # A merged topic's groups were found on part of its queries: the overall ones count there.
    merge_topics(run, "b", "c")
    assert build_context().topic_copy_groups == ((bloc,), overall)


def test_an_unsettled_topic_and_another_runs_topics_count_the_overall_groups(db: None) -> None:
    from dataclasses import replace

    from core.engine.topics import Topic, TopicModel
    from core.services.estimation.finish import stored_topics

    sources = [SourceFactory(name=f"source {j}", chunk_count=1) for j in range(8)]
    # With its verdict checked: three sources of eight repeating one answer on topic a is a
    # bloc agreement alone cannot place, so a is unsettled and stores no groups of its own.
    _, topical = colluding_topical()
    assert topical.unsettled() == [0]
    model = TopicModel([Topic(k, k, tuple(float(i == t) for i in range(2)), 10) for t, k in enumerate("ab")])
    stored = stored_topics(replace(topical, model=model), [s.pk for s in sources])
    assert stored["copy_groups"] == {"b": []}
    run = finished_run(sources)
    run.topics = stored
    run.save(update_fields=["topics"])
    SourceDependenceFactory(run=run, source_a=sources[0], source_b=sources[1], probability=1.0, same_false=9.0)
    overall = (frozenset({sources[0].pk, sources[1].pk}),)
    assert build_context().topic_copy_groups == (overall, ())
    # A later run with topics but without copy detection: its topics are the current ones,
    # the copy groups still the earlier run's, and the two are not mixed.
    later = EstimationRunFactory(
        succeeded=True, sources=sources, params={"estimator": "iwmv"}, finished_at=timezone.now(), topics=stored
    )
    assert later.pk != run.pk
    ctx = build_context()
    assert ctx.copy_groups == overall and ctx.topic_copy_groups == ()
