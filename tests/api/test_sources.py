"""Sources: list, detail with reliability, create, update, deactivate, reliability history."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core.models import EstimationRun
from sources.models import Source
from tests.factories import DocumentFactory, EstimationRunFactory, ReliabilityScoreFactory, SourceFactory
from tests.helpers import error_of


def test_an_analyst_lists_sources_with_reliability_uncertainty_and_document_count(as_analyst):
    wiki = SourceFactory(
        name="wiki", reliability=0.8, reliability_low=0.7, reliability_high=0.9, reliability_answers=40
    )
    DocumentFactory.create_batch(3, source=wiki)
    SourceFactory(name="blog")
    response = as_analyst.get("/api/sources/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    by_name = {row["name"]: row for row in body["results"]}
    assert by_name["wiki"]["document_count"] == 3
    assert by_name["wiki"]["reliability"]["value"] == 0.8
    assert by_name["wiki"]["reliability"]["uncertainty"] == 0.9 - 0.7
    assert by_name["wiki"]["reliability"]["answers"] == 40
    assert by_name["blog"]["reliability"]["value"] is None


def test_sources_are_filtered_by_active_kind_and_name(as_analyst):
    SourceFactory(name="Daily News", kind=Source.Kind.NEWS)
    SourceFactory(name="Old News", kind=Source.Kind.NEWS, active=False)
    SourceFactory(name="Encyclopedia", kind=Source.Kind.REFERENCE)
    names = lambda query: [r["name"] for r in as_analyst.get(f"/api/sources/?{query}").json()["results"]]  # noqa: E731
    assert names("active=true") == ["Daily News", "Encyclopedia"]
    assert names("active=false") == ["Old News"]
    assert names("kind=reference") == ["Encyclopedia"]
    assert names("q=news") == ["Daily News", "Old News"]


def test_a_bad_filter_value_is_a_400_naming_the_parameter(as_analyst):
    response = as_analyst.get("/api/sources/?active=perhaps")
    assert response.status_code == 400
    assert "active" in error_of(response)["fields"]


def test_a_curator_creates_a_source(as_curator):
    response = as_curator.post(
        "/api/sources/", {"name": "gazette", "kind": "news", "homepage": "https://gazette.example"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["document_count"] == 0
    assert Source.objects.get(name="gazette").homepage == "https://gazette.example"


def test_creating_a_source_with_a_taken_name_names_the_field(as_curator):
    SourceFactory(name="gazette")
    response = as_curator.post("/api/sources/", {"name": "gazette"}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "unique"
    assert list(error["fields"]) == ["name"]


def test_unknown_fields_are_rejected_by_name_and_nothing_is_stored(as_curator):
    response = as_curator.post("/api/sources/", {"name": "gazette", "reliabilty": 1.0, "colour": "red"}, format="json")
    assert response.status_code == 400
    fields = error_of(response)["fields"]
    assert fields == {"reliabilty": ["Unknown field."], "colour": ["Unknown field."]}
    assert not Source.objects.filter(name="gazette").exists()


def test_read_only_fields_cannot_be_written(as_curator):
    source = SourceFactory(name="gazette")
    response = as_curator.patch(f"/api/sources/{source.pk}/", {"reliability": {"value": 1}}, format="json")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"reliability": ["This field is read-only."]}


def test_a_curator_updates_a_source(as_curator):
    source = SourceFactory(name="gazette")
    response = as_curator.patch(f"/api/sources/{source.pk}/", {"description": "A local paper."}, format="json")
    assert response.status_code == 200
    source.refresh_from_db()
    assert source.description == "A local paper."
    response = as_curator.put(f"/api/sources/{source.pk}/", {"name": "gazette-2", "kind": "vendor"}, format="json")
    assert response.status_code == 200
    source.refresh_from_db()
    assert (source.name, source.kind) == ("gazette-2", "vendor")


def test_deleting_a_source_deactivates_it_and_keeps_its_documents(as_curator):
    source = SourceFactory(name="gazette")
    DocumentFactory(source=source)
    response = as_curator.delete(f"/api/sources/{source.pk}/")
    assert response.status_code == 200
    assert response.json()["active"] is False
    source.refresh_from_db()
    assert source.active is False
    assert source.documents.count() == 1


def test_the_deactivate_action_deactivates_and_a_patch_reactivates(as_curator):
    source = SourceFactory(name="gazette")
    assert as_curator.post(f"/api/sources/{source.pk}/deactivate/").json()["active"] is False
    assert as_curator.patch(f"/api/sources/{source.pk}/", {"active": True}, format="json").json()["active"] is True


def test_an_unknown_source_is_a_json_404(as_analyst):
    response = as_analyst.get("/api/sources/999999/")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"
    assert as_analyst.get("/api/sources/not-a-number/").status_code == 404


def test_the_reliability_history_lists_finished_runs_oldest_first(as_analyst):
    source = SourceFactory(name="wiki")
    now = timezone.now()
    for offset, value, state in ((2, 0.6, "succeeded"), (1, 0.7, "failed"), (0, 0.75, "succeeded")):
        run = EstimationRunFactory(state=state)
        EstimationRun.objects.filter(pk=run.pk).update(created_at=now - dt.timedelta(days=offset))
        ReliabilityScoreFactory(run=run, source=source, reliability=value, answers=10)
    response = as_analyst.get(f"/api/sources/{source.pk}/reliability/")
    assert response.status_code == 200
    body = response.json()
    assert body["source"] == source.pk
    assert [point["reliability"] for point in body["history"]] == [0.6, 0.75]
    assert body["history"][0]["answers"] == 10
