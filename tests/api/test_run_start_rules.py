"""Starting an estimation run names its sources (a list of ids, or "all"): an empty body
never starts a run over everything. A user has at most ESTIMATION_MAX_CONCURRENT_PER_USER
runs in progress."""

from __future__ import annotations

from rest_framework.test import APIClient

from core.models import EstimationRun
from tasks.models import Job
from tests.api.helpers import demo_query_set, three_sources
from tests.factories import EstimationRunFactory, SourceFactory
from tests.helpers import error_of


def test_an_empty_body_starts_nothing_and_asks_for_the_sources(as_curator):
    demo_query_set()
    SourceFactory(name="wiki", chunk_count=3)
    response = as_curator.post("/api/estimation-runs/", {}, format="json")
    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"sources"}
    assert not EstimationRun.objects.exists() and not Job.objects.exists()


def test_sources_must_be_a_non_empty_list_of_ids_or_all(as_curator: APIClient) -> None:
    demo_query_set()
    SourceFactory(name="wiki", chunk_count=3)
    refused: list[object] = [[], "everything", None, 3]
    for sources in refused:
        response = as_curator.post("/api/estimation-runs/", {"sources": sources}, format="json")
        assert response.status_code == 400, sources
        assert set(error_of(response)["fields"]) == {"sources"}, sources
    assert not EstimationRun.objects.exists()


def test_all_means_every_active_source_that_holds_documents(as_curator):
    query_set = demo_query_set()
    wiki = SourceFactory(name="wiki", chunk_count=3)
    news = SourceFactory(name="news", chunk_count=1)
    almanac = SourceFactory(name="almanac", chunk_count=2)
    SourceFactory(name="empty", chunk_count=0)
    SourceFactory(name="retired", chunk_count=5, active=False)
    response = as_curator.post("/api/estimation-runs/", {"query_set": query_set.pk, "sources": "all"}, format="json")
    assert response.status_code == 202, response.content
    run = EstimationRun.objects.get(pk=response.json()["run"]["id"])
    assert set(run.sources.all()) == {wiki, news, almanac}


def test_a_third_run_in_progress_is_refused_with_429_naming_the_limit(as_curator, curator):
    demo_query_set()
    sources = three_sources()
    EstimationRunFactory(created_by=curator, state=EstimationRun.State.SUCCEEDED)  # finished: does not count
    for _ in range(2):
        assert as_curator.post("/api/estimation-runs/", {"sources": sources}, format="json").status_code == 202
    response = as_curator.post("/api/estimation-runs/", {"sources": sources}, format="json")
    assert response.status_code == 429
    error = error_of(response)
    assert error["code"] == "too_many_runs"
    assert "at most 2 at once (ESTIMATION_MAX_CONCURRENT_PER_USER)" in error["message"]
    assert EstimationRun.objects.filter(created_by=curator).count() == 3


def test_the_cap_is_per_user_and_follows_the_setting(as_curator, curator, settings):
    settings.ESTIMATION_MAX_CONCURRENT_PER_USER = 1
    demo_query_set()
    sources = three_sources()
    EstimationRunFactory(created_by=None, state=EstimationRun.State.RUNNING)  # someone else's (the CLI's)
    assert as_curator.post("/api/estimation-runs/", {"sources": "all"}, format="json").status_code == 202
    assert as_curator.post("/api/estimation-runs/", {"sources": sources}, format="json").status_code == 429
