"""Reliability per topic in the product (issue 39): stored with the run, on the source's page
and the API, used by the answering context, renamed and merged by a curator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.urls import reverse

from core.engine.reliability import get_estimator
from core.engine.reliability.topical import topical_reliability
from core.engine.topics import Topic, TopicModel
from core.services.engine_context import build_context
from core.services.estimation.finish import stored_topics
from core.services.topics import TopicEditError, latest_topics, merge_topics, rename_topic, topic_cells
from tests.factories import EstimationRunFactory, SourceFactory

pytestmark = pytest.mark.django_db


def _run_with_topics(sources: list[Any]) -> Any:
    """A finished run over three sources: the first right on sport and wrong on music."""
    rows = [[0, 0, 0] for _ in range(20)] + [[1, 0, 0] for _ in range(20)]
    labels = np.array(rows, dtype=np.int64)
    result = get_estimator("iwmv").estimate(labels)
    membership = np.zeros((40, 3))
    membership[:20, 0] = 1.0
    membership[20:30, 1] = 1.0
    membership[30:, 2] = 1.0
    topical = topical_reliability(labels, result, membership, ["t1", "t2", "t3"], identify_topics=False)
    model = TopicModel(
        [
            Topic("t1", "football · cup", (1.0, 0.0, 0.0), 20),
            Topic("t2", "album · singer", (0.0, 1.0, 0.0), 10),
            Topic("t3", "song · chart", (0.0, 0.0, 1.0), 10),
        ]
    )
    from dataclasses import replace

    stored = stored_topics(replace(topical, model=model), [s.pk for s in sources])
    return EstimationRunFactory(succeeded=True, sources=sources, topics=stored)


def test_the_source_page_shows_its_reliability_by_topic(analyst_client: Any) -> None:
    sources = [SourceFactory(name=f"source {i}") for i in range(3)]
    run = _run_with_topics(sources)
    cells = topic_cells(run, sources[0].pk)
    by_name = {c["name"]: c["accuracy"] for c in cells}
    assert by_name["football · cup"] > 0.8 and by_name["album · singer"] < 0.3
    page = analyst_client.get(reverse("source-detail", args=[sources[0].pk])).content.decode()
    assert 'id="topic-chart"' in page and "football · cup" in page and "album · singer" in page
    # The API serves the same numbers on the run.
    data = analyst_client.get(f"/api/estimation-runs/{run.pk}/").json()
    cell = next(c for c in data["topics"]["cells"][str(sources[0].pk)] if c["key"] == "t2")
    assert cell["accuracy"] == pytest.approx(by_name["album · singer"], abs=1e-4)
    # And on the source, with its names.
    served = analyst_client.get(f"/api/sources/{sources[0].pk}/").json()["topics"]
    assert {t["name"]: t["accuracy"] for t in served} == by_name
    listed = analyst_client.get("/api/sources/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert all(len(row["topics"]) == 3 for row in rows if row["id"] in {s.pk for s in sources})


def test_the_answering_context_carries_the_topics(db: Any) -> None:
    sources = [SourceFactory(name=f"source {i}", chunk_count=1) for i in range(3)]
    _run_with_topics(sources)
    ctx = build_context()
    assert ctx.topics is not None and ctx.topics.keys == ["t1", "t2", "t3"]
    first = next(s for s in ctx.sources if s.id == sources[0].pk)
    assert len(first.topic_accuracy) == 3 and first.topic_accuracy[0] > first.topic_accuracy[1] + 0.5


def test_a_curator_renames_and_merges_topics(db: Any) -> None:
    sources = [SourceFactory(name=f"source {i}") for i in range(3)]
    run = _run_with_topics(sources)
    rename_topic(run, "t2", "Pop music")
    merge_topics(run, "t2", "t3")
    run.refresh_from_db()
    assert [t.name for t in latest_topics().topics] == ["football · cup", "Pop music"]  # type: ignore[union-attr]
    merged = next(c for c in topic_cells(run, sources[0].pk) if c["key"] == "t2")
    assert merged["answers"] == pytest.approx(20, abs=0.01) and merged["accuracy"] < 0.3
    with pytest.raises(TopicEditError):
        merge_topics(run, "t1", "t1")
    with pytest.raises(TopicEditError):
        rename_topic(run, "t9", "x")


def test_the_sources_list_filters_by_topic_and_the_run_page_shows_the_widest_spread(analyst_client: Any) -> None:
    sources = [SourceFactory(name=f"source {i}") for i in range(3)]
    run = _run_with_topics(sources)
    page = analyst_client.get(reverse("source-list") + "?topic=t2").content.decode()
    assert 'id="source-topic"' in page and "On “album · singer”" in page
    # Ordered by reliability on the topic: source 0 (wrong on music) comes last.
    assert page.index(">source 1<") < page.index(">source 0<") and page.index(">source 2<") < page.index(">source 0<")
    # An unknown topic is a 400 naming the parameter (it was ignored: the whole list, as if asked for).
    unknown = analyst_client.get(reverse("source-list") + "?topic=nope")
    assert unknown.status_code == 400 and "topic: Choose a topic of the latest run" in unknown.content.decode()
    run_page = analyst_client.get(reverse("run-result", args=[run.pk])).content.decode()
    assert 'id="run-topics"' in run_page
    spread = run_page[run_page.index('id="run-topics"') :]
    assert spread.index(">source 0<") < spread.index("</table>")  # the source that differs is listed first


def test_the_admin_renames_and_merges_topics_through_a_form(admin_client: Any) -> None:
    sources = [SourceFactory(name=f"source {i}") for i in range(3)]
    run = _run_with_topics(sources)
    url = reverse("admin:core_estimationrun_topics", args=[run.pk])
    assert "album · singer" in admin_client.get(url).content.decode()
    refused = admin_client.post(url, {"action": "merge", "topic": "t2", "other": "t2"})
    assert refused.status_code == 200 and "cannot be merged into itself" in refused.content.decode()
    assert admin_client.post(url, {"action": "rename", "topic": "t2", "name": "Pop music"}).status_code == 302
    assert admin_client.post(url, {"action": "merge", "topic": "t2", "other": "t3"}).status_code == 302
    run.refresh_from_db()
    assert [t["name"] for t in run.topics["model"]["topics"]] == ["football · cup", "Pop music"]
