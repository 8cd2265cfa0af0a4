"""The claims API: claims with filters, homologous groups with their confidence, claim-level
resolutions, loading claims through a mapping and starting claim-level runs; analysts read,
curators write."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from core.models import ClaimResolution, EstimationRun
from core.services.estimation import start_claim_run
from sources.models import Claim
from tasks.engine_tasks import claim_estimation
from tasks.models import Job
from tests.factories import (
    ClaimFactory,
    ClaimResolutionFactory,
    EstimationRunFactory,
    ReliabilityScoreFactory,
    SourceDependenceFactory,
    SourceFactory,
)
from tests.helpers import error_of

FLIGHT = "AA-3859-IAH-ORD"
MAPPING = {"subject": "flight", "source": "src", "attributes": {"act_dep_time": "time"}}
CSV = b"src,flight,act_dep_time\naa,AA-1,7:16 a.m.\nua,AA-1,7:20 a.m.\n"


def claims_world() -> dict[str, Any]:
    """Three sources on one flight's departure (two agree), one on another attribute."""
    aa, ua, orbitz = SourceFactory(name="aa"), SourceFactory(name="ua"), SourceFactory(name="orbitz")
    world = {"sources": (aa, ua, orbitz)}
    for source, value in ((aa, "07:16"), (ua, "07:16"), (orbitz, "07:30")):
        ClaimFactory(
            source=source,
            subject=FLIGHT,
            attribute="actual departure time",
            value=value,
            raw_value=value.lstrip("0") + " a.m.",
            normalizer="time",
            provenance={"file": "dirty.csv", "line": 2, "field": "act_dep_time"},
        )
    ClaimFactory(source=aa, subject=FLIGHT, attribute="scheduled departure time", value="07:10", normalizer="time")
    ClaimFactory(source=ua, subject="UA-1-SFO-JFK", attribute="actual departure time", value="09:00", method="model")
    return world


def ids(response: Any) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


# --- Reading ---------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/api/claims/", "/api/claim-resolutions/", "/api/claim-groups/?subject=x&attribute=y"])
def test_reading_claims_needs_a_role(as_nobody, anonymous, url):
    assert anonymous.get(url).status_code == 401
    response = as_nobody.get(url)
    assert response.status_code == 403
    assert error_of(response)["code"] == "permission_denied"


def test_an_analyst_lists_claims_with_filters(as_analyst):
    world = claims_world()
    aa, ua, _ = world["sources"]
    every = ids(as_analyst.get("/api/claims/"))
    assert len(every) == 5
    assert ids(as_analyst.get(f"/api/claims/?source={aa.pk}")) == list(
        Claim.objects.filter(source=aa).order_by("subject", "attribute", "source_id", "id").values_list("id", flat=True)
    )
    by_item = as_analyst.get(f"/api/claims/?subject={FLIGHT}&attribute=actual departure time").json()
    assert by_item["count"] == 3
    assert sorted(c["value"] for c in by_item["results"]) == ["07:16", "07:16", "07:30"]
    assert [c["source_name"] for c in as_analyst.get("/api/claims/?method=model").json()["results"]] == ["ua"]
    assert as_analyst.get("/api/claims/?q=ua-1-sfo").json()["count"] == 1  # subject contains, any case
    assert as_analyst.get("/api/claims/?q=07:1").json()["count"] == 3  # or value contains
    page = as_analyst.get("/api/claims/?page_size=2").json()
    assert (page["count"], len(page["results"])) == (5, 2) and page["next"]
    response = as_analyst.get("/api/claims/?source=abc")
    assert response.status_code == 400 and "source" in error_of(response)["fields"]


def test_a_claim_is_retrieved_with_its_provenance(as_analyst):
    claims_world()
    claim = Claim.objects.get(source__name="orbitz")
    body = as_analyst.get(f"/api/claims/{claim.pk}/").json()
    assert (body["source_name"], body["subject"], body["attribute"]) == ("orbitz", FLIGHT, "actual departure time")
    assert (body["value"], body["raw_value"], body["normalizer"], body["method"]) == (
        "07:30",
        "7:30 a.m.",
        "time",
        "mapping",
    )
    assert body["provenance"] == {"file": "dirty.csv", "line": 2, "field": "act_dep_time"}


def test_a_group_shows_its_values_sources_resolution_and_confidence(as_analyst):
    world = claims_world()
    aa, ua, orbitz = world["sources"]
    for source, reliability in ((aa, 0.9), (ua, 0.8), (orbitz, 0.2)):
        type(source).objects.filter(pk=source.pk).update(reliability=reliability, reliability_answers=10)
    old = ClaimResolutionFactory(subject=FLIGHT, attribute="actual departure time", value="07:30")
    latest = ClaimResolutionFactory(
        subject=FLIGHT,
        attribute="actual departure time",
        value="07:16",
        confidence=0.93,
        values=[
            {"value": "07:16", "sources": [aa.pk, ua.pk], "share": 0.9},
            {"value": "07:30", "sources": [orbitz.pk], "share": 0.1},
        ],
    )
    assert latest.run.created_at >= old.run.created_at
    response = as_analyst.get("/api/claim-groups/", {"subject": FLIGHT, "attribute": "actual departure time"})
    assert response.status_code == 200, response.content
    group = response.json()
    assert (group["claims"], group["sources"]) == (3, 3)
    assert [(v["value"], v["claims"], [s["name"] for s in v["sources"]]) for v in group["values"]] == [
        ("07:16", 2, ["aa", "ua"]),
        ("07:30", 1, ["orbitz"]),
    ]
    assert group["values"][0]["sources"][0]["reliability"] == 0.9
    resolution = group["resolution"]
    assert (resolution["run_id"], resolution["value"], resolution["confidence"]) == (latest.run_id, "07:16", 0.93)
    assert resolution["conflicting"] is True and resolution["claims"] == 3
    confidence = group["confidence"]
    # Graph level: one pair of the six ordered pairs of distinct claims agrees in each direction.
    assert confidence["confidence"] == pytest.approx(2 / 6)
    assert confidence["answer"] == "07:16" and confidence["isolated"] is False
    nodes = {n["source_id"]: n for n in confidence["nodes"]}
    assert set(nodes) == {aa.pk, ua.pk, orbitz.pk}
    assert nodes[aa.pk]["consistency"] == pytest.approx(0.5) and nodes[orbitz.pk]["consistency"] == 0.0
    assert nodes[aa.pk]["confidence"] > nodes[orbitz.pk]["confidence"]
    assert nodes[orbitz.pk]["llm_authority"] is None


def test_a_group_needs_its_subject_and_attribute_and_must_exist(as_analyst):
    claims_world()
    response = as_analyst.get("/api/claim-groups/?subject=" + FLIGHT)
    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"attribute"}
    response = as_analyst.get("/api/claim-groups/", {"subject": "nothing", "attribute": "actual departure time"})
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_resolutions_default_to_the_latest_succeeded_claim_run_and_filter(as_analyst):
    assert as_analyst.get("/api/claim-resolutions/").json()["count"] == 0  # no claim run yet
    first = EstimationRunFactory(succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    ClaimResolutionFactory(run=first, subject="a", value="1")
    latest = EstimationRunFactory(succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    failed = EstimationRunFactory(state=EstimationRun.State.FAILED, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    ClaimResolutionFactory(run=failed, subject="a", value="3")
    calm = ClaimResolutionFactory(run=latest, subject="a", attribute="x", value="2")
    split = ClaimResolutionFactory(
        run=latest,
        subject="b",
        attribute="x",
        values=[{"value": "v", "sources": [1], "share": 0.6}, {"value": "w", "sources": [2], "share": 0.4}],
    )
    assert ids(as_analyst.get("/api/claim-resolutions/")) == [calm.pk, split.pk]
    assert ids(as_analyst.get("/api/claim-resolutions/?conflicting=true")) == [split.pk]
    assert ids(as_analyst.get("/api/claim-resolutions/?subject=a")) == [calm.pk]
    assert [r["value"] for r in as_analyst.get(f"/api/claim-resolutions/?run={first.pk}").json()["results"]] == ["1"]
    body = as_analyst.get(f"/api/claim-resolutions/{split.pk}/").json()
    assert body["conflicting"] is True and body["claims"] == 2
    assert body["values"][0] == {"value": "v", "sources": [1], "share": 0.6}
    response = as_analyst.get("/api/claim-resolutions/?conflicting=maybe")
    assert response.status_code == 400 and "conflicting" in error_of(response)["fields"]


# --- Loading claims --------------------------------------------------------------------


def upload(client: Any, mapping: Any, **extra: Any) -> Any:
    body = {
        "files": [SimpleUploadedFile("flights.csv", CSV, content_type="text/csv")],
        "mapping": mapping if isinstance(mapping, str) else json.dumps(mapping),
        **extra,
    }
    return client.post("/api/claims/load/", body, format="multipart")


def test_an_analyst_cannot_load_claims(as_analyst):
    response = upload(as_analyst, MAPPING)
    assert response.status_code == 403
    assert "curator" in error_of(response)["message"]
    assert not Job.objects.exists()


def test_a_curator_loads_claims_as_a_job(as_curator, curator):
    response = upload(as_curator, MAPPING)
    assert response.status_code == 202, response.content
    body = response.json()
    job = Job.objects.get(pk=body["job"])
    assert (job.kind, job.created_by, body["files"]) == (Job.Kind.INGEST, curator, 1)
    assert response["Location"].endswith(f"/api/jobs/{job.pk}/") and body["status_url"] == response["Location"]
    assert job.params["mapping"] == MAPPING


@pytest.mark.parametrize(
    ("mapping", "field", "words"),
    [
        ("{not json", "mapping", "not valid JSON"),
        ("[" * 10_000 + "]" * 10_000, "mapping", "nested deeper than 64 levels"),
        ({"attributes": {"act_dep_time": "time"}}, "mapping.subject", "field name"),
        (
            {"subject": "flight", "attributes": {"act_dep_time": "clock"}},
            "mapping.attributes.act_dep_time",
            "unknown normaliser",
        ),
        ({"subject": "flight", "attribute": {}}, "mapping", "unknown keys"),
    ],
)
def test_a_bad_mapping_is_a_400_naming_its_field_and_starts_nothing(as_curator, mapping, field, words):
    response = upload(as_curator, mapping)
    assert response.status_code == 400
    error = error_of(response)
    assert set(error["fields"]) == {field}
    assert words in error["fields"][field][0]
    assert not Job.objects.exists() and not Claim.objects.exists()


def test_a_file_the_mapping_cannot_read_is_a_400_naming_the_file_and_line(as_curator):
    mapping = {**MAPPING, "attributes": {"sched_dep_time": "time"}}  # no such column
    response = upload(as_curator, mapping)
    assert response.status_code == 400
    assert "flights.csv" in error_of(response)["fields"]["files"][0]
    response = upload(as_curator, {"subject": "flight", "attributes": {"act_dep_time": "time"}})  # no source
    assert response.status_code == 400 and set(error_of(response)["fields"]) == {"source"}
    assert not Job.objects.exists()


# --- Claim-level runs ------------------------------------------------------------------


def test_an_analyst_cannot_start_a_claim_run(as_analyst):
    claims_world()
    assert as_analyst.post("/api/claim-runs/", {}, format="json").status_code == 403
    assert not EstimationRun.objects.exists()


def test_a_curator_starts_a_claim_run_and_gets_202_with_its_job(as_curator, curator):
    world = claims_world()
    aa, ua, orbitz = world["sources"]
    response = as_curator.post(
        "/api/claim-runs/",
        {"estimator": "iwmv", "sources": [aa.pk, ua.pk, orbitz.pk], "attributes": ["actual departure time"]},
        format="json",
    )
    assert response.status_code == 202, response.content
    body = response.json()
    run = EstimationRun.objects.get(pk=body["run"]["id"])
    assert (run.kind, run.created_by, run.params) == (
        EstimationRun.Kind.CLAIMS,
        curator,
        {"estimator": "iwmv", "attributes": ["actual departure time"]},
    )
    assert body["run"]["kind"] == "claims" and sorted(body["run"]["sources"]) == sorted([aa.pk, ua.pk, orbitz.pk])
    assert body["job"] == run.job_id and response["Location"].endswith(f"/api/jobs/{run.job_id}/")


def test_a_curator_may_declare_authorities_and_they_must_be_sources_of_the_run(as_curator):
    world = claims_world()
    aa, ua, orbitz = world["sources"]
    response = as_curator.post(
        "/api/claim-runs/", {"sources": [aa.pk, ua.pk], "authorities": [orbitz.pk]}, format="json"
    )
    assert response.status_code == 400 and "authorities" in error_of(response)["fields"]
    assert not EstimationRun.objects.exists()
    # orbitz alone says 07:30 against aa and ua's 07:16: declared an authority, its value holds.
    response = as_curator.post(
        "/api/claim-runs/", {"sources": [aa.pk, ua.pk, orbitz.pk], "authorities": [orbitz.pk]}, format="json"
    )
    assert response.status_code == 202, response.content
    run = EstimationRun.objects.get(pk=response.json()["run"]["id"])
    assert run.params["authorities"] == [orbitz.pk]
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    resolved = ClaimResolution.objects.get(run=run, subject=FLIGHT, attribute="actual departure time")
    assert (resolved.value, resolved.confidence) == ("07:30", 1.0)


def test_a_claim_run_without_claims_or_with_bad_names_is_a_400(as_curator):
    response = as_curator.post("/api/claim-runs/", {}, format="json")
    assert response.status_code == 400 and "claims" in error_of(response)["fields"]
    claims_world()
    response = as_curator.post("/api/claim-runs/", {"estimator": "oracle"}, format="json")
    assert response.status_code == 400 and set(error_of(response)["fields"]) == {"estimator"}
    response = as_curator.post("/api/claim-runs/", {"attributes": ["anthem"], "speed": 3}, format="json")
    assert response.status_code == 400 and set(error_of(response)["fields"]) == {"speed"}
    response = as_curator.post("/api/claim-runs/", {"attributes": ["anthem"]}, format="json")
    assert response.status_code == 400 and "anthem" in error_of(response)["fields"]["attributes"][0]
    assert not EstimationRun.objects.exists() and not Job.objects.exists()


def finished_claim_run() -> EstimationRun:
    claims_world()
    run = start_claim_run(estimator="accucopy")
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    run.refresh_from_db()
    assert run.state == EstimationRun.State.SUCCEEDED
    return run


def test_a_claim_run_reads_like_any_run_and_refuses_a_gold_update(as_analyst, as_curator):
    run = finished_claim_run()
    ReliabilityScoreFactory()  # an earlier-looking full run must not become its "previous run"
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert body["kind"] == "claims" and body["query_set"] is None
    assert {s["source_name"] for s in body["scores"]} == {"aa", "ua", "orbitz"}
    assert body["changes"]["previous_run_id"] is None
    assert as_analyst.get(f"/api/estimation-runs/{run.pk}/dependence/").status_code == 200
    history = as_analyst.get(f"/api/sources/{run.sources.get(name='aa').pk}/reliability/").json()["history"]
    assert [(h["run_id"], h["kind"]) for h in history] == [(run.pk, "claims")]
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/update/", {}, format="json")
    assert response.status_code == 409
    assert "claim-level" in error_of(response)["message"]
    assert EstimationRun.objects.filter(kind=EstimationRun.Kind.UPDATE).count() == 0


def test_a_claim_runs_copiers_show_their_shared_false_values(as_analyst):
    run = EstimationRunFactory(
        succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None, params={"estimator": "accucopy"}
    )
    example = {"subject": FLIGHT, "attribute": "actual departure time", "value": "07:30"}
    pair = SourceDependenceFactory(run=run, examples=[example])
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/dependence/").json()
    assert body["copy_detection"] is True
    assert [(p["source_a"], p["examples"]) for p in body["pairs"]] == [(pair.source_a_id, [example])]
    conflicts = as_analyst.get(f"/api/conflicts/?run={run.pk}").json()
    assert conflicts["pairs"] == [] and conflicts["dependent_pairs"][0]["examples"] == [example]


def test_a_failed_claim_run_is_resumed_through_the_api(as_curator: APIClient) -> None:
    run = finished_claim_run()
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json")
    assert response.status_code == 409 and "re-estimate" in error_of(response)["message"]
    EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.FAILED)
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json")
    assert response.status_code == 202, response.content
    run.refresh_from_db()
    assert run.state == EstimationRun.State.PENDING and response.json()["job"] == run.job_id
    assert run.job_id is not None
    assert Job.objects.get(pk=run.job_id).params == {"run_id": run.pk}


def test_the_schema_documents_the_claim_endpoints(as_analyst):
    paths = as_analyst.get("/api/schema/?format=json").json()["paths"]
    for path in (
        "/api/claims/",
        "/api/claims/{id}/",
        "/api/claims/load/",
        "/api/claim-groups/",
        "/api/claim-resolutions/",
        "/api/claim-resolutions/{id}/",
        "/api/claim-runs/",
    ):
        assert path in paths, path
    assert "post" in paths["/api/claims/load/"] and "post" in paths["/api/claim-runs/"]
