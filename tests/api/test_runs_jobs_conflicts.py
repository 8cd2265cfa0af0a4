"""Estimation runs, jobs, conflicts, and the served schema and docs."""

from __future__ import annotations

from core.models import EstimationRun
from tasks.models import Job
from tests.api.helpers import answered_question, demo_query_set, finished_run
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    JobFactory,
    RunResponseFactory,
    SourceFactory,
)
from tests.helpers import error_of


def test_a_run_is_retrieved_with_per_source_scores_and_changes(as_analyst):
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    finished_run([wiki, blog], [0.6, 0.4])
    run = finished_run([wiki, blog], [0.8, 0.3])
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert (body["state"], body["iterations"], body["converged"]) == ("succeeded", 3, True)
    assert [(s["source_name"], s["reliability"], s["answers"]) for s in body["scores"]] == [
        ("wiki", 0.8, 8),
        ("blog", 0.3, 8),
    ]
    deltas = {c["source_name"]: round(c["delta"], 6) for c in body["changes"]["sources"]}
    assert deltas == {"wiki": 0.2, "blog": -0.1}


def test_runs_are_listed_newest_first_and_filtered_by_state(as_analyst):
    first = finished_run([], [])
    second = EstimationRunFactory(state=EstimationRun.State.FAILED)
    ids = lambda query: [r["id"] for r in as_analyst.get(f"/api/estimation-runs/{query}").json()["results"]]  # noqa: E731
    assert ids("") == [second.pk, first.pk]
    assert ids("?state=failed") == [second.pk]


def test_a_curator_starts_a_run_and_gets_202_with_its_job(as_curator, curator):
    query_set = demo_query_set(2)
    # At least three sources: a source's reliability comes from agreement with the others.
    chosen = [SourceFactory(name=name, chunk_count=3) for name in ("wiki", "wire", "almanac")]
    response = as_curator.post(
        "/api/estimation-runs/",
        {"query_set": query_set.pk, "sources": [s.pk for s in chosen], "params": {"k": 2}},
        format="json",
    )
    assert response.status_code == 202, response.content
    body = response.json()
    run = EstimationRun.objects.get(pk=body["run"]["id"])
    assert run.created_by == curator
    assert set(run.sources.all()) == set(chosen)
    assert run.params["k"] == 2
    assert body["job"] == run.job_id
    assert response["Location"].endswith(f"/api/jobs/{run.job_id}/")


def test_a_run_over_sources_without_documents_names_the_sources_and_stores_nothing(as_curator):
    query_set = demo_query_set(2)
    empty = SourceFactory(name="empty")
    response = as_curator.post(
        "/api/estimation-runs/", {"query_set": query_set.pk, "sources": [empty.pk]}, format="json"
    )
    assert response.status_code == 400
    assert "empty" in error_of(response)["fields"]["sources"][0]
    assert not EstimationRun.objects.exists()
    assert not Job.objects.exists()


def test_a_bad_run_parameter_is_named_inside_params(as_curator):
    query_set = demo_query_set(2)
    for name in ("wiki", "wire", "almanac"):  # enough sources: only the parameters are at fault
        SourceFactory(name=name, chunk_count=3)
    response = as_curator.post(
        "/api/estimation-runs/",
        {"query_set": query_set.pk, "sources": "all", "params": {"tau": "high", "speed": 9}},
        format="json",
    )
    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"params", "params.tau"}


def test_a_job_reports_state_progress_message_error_and_result(as_analyst):
    job = JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.FAILED,
        progress_current=1,
        progress_total=4,
        message="Failed",
        error="bad.jsonl, line 2: invalid JSON",
        result={"documents": 0},
    )
    body = as_analyst.get(f"/api/jobs/{job.pk}/").json()
    assert body["state"] == "failed"
    assert body["progress"] == {"current": 1, "total": 4, "percent": 25}
    assert (body["message"], body["error"], body["result"]) == (
        "Failed",
        "bad.jsonl, line 2: invalid JSON",
        {"documents": 0},
    )
    assert [j["id"] for j in as_analyst.get("/api/jobs/?kind=ingest").json()["results"]] == [job.pk]
    assert as_analyst.get("/api/jobs/?kind=ask").json()["count"] == 0


def test_conflicts_list_pairwise_disagreement_of_the_latest_run(as_analyst):
    wiki, blog, forum = SourceFactory(name="wiki"), SourceFactory(name="blog"), SourceFactory(name="forum")
    run = finished_run([wiki, blog, forum], [0.9, 0.5, 0.2])
    query = FactQueryFactory(query_set=demo_query_set(0), question="Capital of France?")
    for source, cluster in ((wiki, 0), (blog, 0), (forum, 1)):
        RunResponseFactory(run=run, query=query, source=source, response="x", cluster=cluster)
    body = as_analyst.get("/api/conflicts/").json()
    assert body["run_id"] == run.pk
    rates = {(p["source_a_name"], p["source_b_name"]): p["rate"] for p in body["pairs"]}
    assert rates == {("wiki", "blog"): 0.0, ("wiki", "forum"): 1.0, ("blog", "forum"): 1.0}
    assert as_analyst.get(f"/api/conflicts/?run={run.pk}").json() == body


def test_conflicts_default_to_the_latest_run_with_a_shared_query_as_the_page_does(as_analyst):
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    shared = finished_run([wiki, blog], [0.9, 0.4])
    query = FactQueryFactory(query_set=demo_query_set(0), question="Capital of France?")
    for source, cluster in ((wiki, 0), (blog, 1)):
        RunResponseFactory(run=shared, query=query, source=source, response="x", cluster=cluster)
    lonely = finished_run([wiki], [0.8])  # newer, over one source: nothing to compare
    RunResponseFactory(run=lonely, query=query, source=wiki, response="x", cluster=0)
    assert as_analyst.get("/api/conflicts/").json()["run_id"] == shared.pk
    assert as_analyst.get(f"/api/conflicts/?run={lonely.pk}").json()["pairs"] == []


def test_conflicts_without_any_finished_run_are_empty(as_analyst):
    assert as_analyst.get("/api/conflicts/").json() == {
        "run_id": None,
        "pairs": [],
        "copy_detection": False,
        "dependent_pairs": [],
        "unsettled": False,
    }


def test_conflicts_of_a_question_are_its_clusters_and_abstentions(as_analyst):
    question = answered_question()
    body = as_analyst.get(f"/api/conflicts/?question={question.pk}").json()
    assert body["question_id"] == question.pk
    assert [(c["label"], c["chosen"], [m["source_name"] for m in c["sources"]]) for c in body["clusters"]] == [
        ("Paris", True, ["wiki"])
    ]
    assert [m["source_name"] for m in body["abstained"]] == ["blog"]


def test_conflicts_of_an_unknown_question_or_run_are_404_and_a_bad_id_is_400(as_analyst):
    assert as_analyst.get("/api/conflicts/?question=424242").status_code == 404
    assert as_analyst.get("/api/conflicts/?run=424242").status_code == 404
    response = as_analyst.get("/api/conflicts/?question=abc")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["question"]


def test_the_openapi_schema_is_served_and_describes_every_endpoint(anonymous, db):
    response = anonymous.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/sources/",
        "/api/sources/{id}/reliability/",
        "/api/documents/",
        "/api/questions/",
        "/api/estimation-runs/{id}/",
        "/api/jobs/{id}/",
        "/api/conflicts/",
        "/api/token/",
    ):
        assert path in paths
    assert "413" in paths["/api/documents/"]["post"]["responses"]


def test_the_interactive_docs_load_their_scripts_from_this_server_not_a_cdn(anonymous, db):
    for url in ("/api/docs/", "/api/redoc/"):
        page = anonymous.get(url).content.decode()
        assert "drf_spectacular_sidecar" in page
        assert "cdn.jsdelivr" not in page and "unpkg.com" not in page
