"""Pages that do not mislead: jobs read as a person's log, run and source pages that
show the reference answers, the source list by reliability, the three-source rule of estimation
runs, the conflicts page's default run, a branded admin with rounded numbers, styled error pages,
the favicon, page titles and the logout confirmation.

The world (tests/dashboard/conftest.py) has four sources and two finished runs over three
queries: query 0 splits 2-2 (paris / lyon, the estimate is "lyon"), query 1 is "blue", query 2
splits 2-2 (4 / 5, the estimate is "4")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from core.engine.types import JSONObject
from core.models import EstimationRun, FactQuery
from core.services.estimation import start_estimation_run
from core.views.errors import server_error
from sources.models import Source
from sources.services import ingest_headline, start_ingest_job
from tasks.models import Job
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    JobFactory,
    QueryCollectionFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    RunAnswerFactory,
    RunResponseFactory,
    SourceFactory,
)
from tests.helpers import must_search

PRODUCT = "Reliability-aware RAG"


def page(client: Any, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code)
    text: str = response.content.decode()
    return text


def title_of(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    assert found, "the page has no <title>"
    return found.group(1).strip()


# --- Jobs read as a person's log -------------------------------------------------------


def test_a_question_job_is_titled_by_its_question_not_by_the_job_and_links_to_it(analyst_client: Any) -> None:
    JobFactory.create_batch(3, kind=Job.Kind.OTHER)  # the job's number and the question's differ
    question = QuestionFactory(text="Who wrote the novel Dracula?")
    job = JobFactory(kind=Job.Kind.ASK, state=Job.State.SUCCEEDED, params={"question_id": question.pk})
    assert job.pk != question.pk
    detail = page(analyst_client, reverse("job-detail", args=[job.pk]))
    heading = must_search(r'<h1 id="job-title">(.*?)</h1>', detail).group(1)
    assert heading == f"Question #{question.pk}: Who wrote the novel Dracula?"
    assert f'href="{reverse("question-detail", args=[question.pk])}"' in detail
    listing = page(analyst_client, reverse("job-list"))
    assert f"Question #{question.pk}: Who wrote the novel Dracula?" in listing
    assert f"Question #{job.pk}:" not in listing


def test_an_estimation_job_is_titled_by_its_run_and_links_to_the_run(analyst_client: Any) -> None:
    run = EstimationRunFactory(succeeded=True)
    job = JobFactory(
        kind=Job.Kind.ESTIMATE,
        state=Job.State.SUCCEEDED,
        params={"run_id": run.pk, "dispatch": {"sent": [[1, 2]]}},
        result={
            "run_id": run.pk,
            "queries": 3,
            "sources": 3,
            "converged": True,
            "scores": [
                {"source": "wiki", "reliability": 0.8043478260869565, "weight": 1.3, "answers": 12, "agreements": 10}
            ],
        },
    )
    EstimationRun.objects.filter(pk=run.pk).update(job=job)
    claims = EstimationRunFactory(succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    claim_job = JobFactory(kind=Job.Kind.ESTIMATE, params={"run_id": claims.pk})
    detail = page(analyst_client, reverse("job-detail", args=[job.pk]))
    assert f'<h1 id="job-title">Estimation run #{run.pk}</h1>' in detail
    assert f'href="{reverse("run-detail", args=[run.pk])}"' in detail
    # The result reads as lines: a source's score in words, numbers rounded, never a dict.
    assert "wiki</span>: reliability 0.804, weight 1.3, 12 answers (10 agree)" in detail
    assert "Converged</span>: yes" in detail
    assert "{&#x27;" not in detail and "0.8043478260869565" not in detail
    assert "dispatch" not in detail.lower()  # the coordinator's state is the worker's business
    claim_detail = page(analyst_client, reverse("job-detail", args=[claim_job.pk]))
    assert f"Claim-level estimation run #{claims.pk}" in claim_detail


def ingestion_job(source: Source, *, new: int, held: int) -> Job:
    return JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.SUCCEEDED,
        message="Done",  # what an ingestion ended with before its headline counted documents
        params={"source_id": source.pk, "source": source.name, "paths": ["/srv/corpus/notes.csv"], "options": {}},
        result={
            "source": source.name,
            "files": [{"file": "notes.csv", "documents": new, "duplicates": held, "chunks": new, "error": ""}],
            "documents": new,
            "chunks": new,
            "duplicates": held,
        },
    )


def test_an_ingestion_job_says_how_many_documents_were_new_and_how_many_already_held(analyst_client: Any) -> None:
    wiki = SourceFactory(name="wiki")
    job = ingestion_job(wiki, new=0, held=3)
    listing = page(analyst_client, reverse("job-list"))
    assert "Ingestion into wiki" in listing
    assert "wiki: 0 new documents, 3 already held (0 chunks) from 1 file" in listing
    detail = page(analyst_client, reverse("job-detail", args=[job.pk]))
    assert '<h1 id="job-title">Ingestion into wiki</h1>' in detail
    assert f'href="{reverse("source-detail", args=[wiki.pk])}"' in detail
    assert "New documents</span>: 0" in detail and "Already held</span>: 3" in detail
    assert "notes.csv</span>: 0 new documents, 3 already held, 0 chunks" in detail
    assert "{&#x27;" not in detail and "[&#x27;" not in detail


def test_the_ingest_task_ends_with_its_new_and_held_counts(db: Any, tmp_path: Path) -> None:
    """The real task, run in this process twice over the same file: the second run says that
    nothing was new, never that documents were ingested."""
    from tasks.tasks import ingest_files

    source = SourceFactory(name="wire")
    path = tmp_path / "notes.csv"
    path.write_text("title,text\nA,The sky is blue.\nB,Grass is green.\n")
    first = start_ingest_job(source, [path])
    ingest_files(job_id=first.pk)
    first.refresh_from_db()
    assert first.state == Job.State.SUCCEEDED, first.error
    assert first.message == "wire: 2 new documents, 0 already held (2 chunks) from 1 file"
    again = start_ingest_job(source, [path])
    ingest_files(job_id=again.pk)
    again.refresh_from_db()
    assert again.message == "wire: 0 new documents, 2 already held (0 chunks) from 1 file"


def test_the_headline_counts_rejected_files() -> None:
    result: JSONObject = {
        "source": "wiki",
        "files": [{"file": "a.csv", "documents": 1, "duplicates": 0, "chunks": 2}, {"file": "b.csv", "error": "bad"}],
        "documents": 1,
        "chunks": 2,
        "duplicates": 0,
    }
    assert ingest_headline(result) == "wiki: 1 new document, 0 already held (2 chunks) from 2 files; 1 file rejected"


def test_the_admin_upload_message_promises_no_new_documents_and_prints_heading_and_error_once(
    db: Any, admin_client: Any
) -> None:
    source = SourceFactory(name="uploads")
    form = page(admin_client, reverse("admin:sources_source_upload"))
    assert form.count("Upload documents</h1>") == 1
    bad = SimpleUploadedFile("notes.csv", b"title,text\nA,The sky is blue.\nB,Grass,green\n")
    refused = admin_client.post(reverse("admin:sources_source_upload"), {"source": source.pk, "files": [bad]})
    assert refused.content.decode().count("notes.csv, line 3: expected 2 columns, found 3") == 1
    good = SimpleUploadedFile("notes.csv", b"title,text\nA,The sky is blue.\nB,Grass is green.\n")
    response = admin_client.post(
        reverse("admin:sources_source_upload"), {"source": source.pk, "files": [good], "csv_mapping": ""}, follow=True
    )
    text = response.content.decode()
    assert "Ingestion into uploads started: 1 file with 2 documents to check against those already held" in text
    assert "Ingestion of 2 document(s) started" not in text


# --- Run and source pages --------------------------------------------------------------


def set_references(world: Any, *answers: list[str]) -> None:
    for query, refs in zip(world.queries, answers, strict=True):
        FactQuery.objects.filter(pk=query.pk).update(reference_answers=refs)


def test_the_run_page_shows_reference_answers_beside_the_estimates_and_marks_the_wrong_ones(
    analyst_client: Any, world: Any
) -> None:
    set_references(world, ["Paris"], ["blue"], [])
    html = page(analyst_client, reverse("run-detail", args=[world.runs[1].pk]))
    table = html[html.index('id="answer-table"') : html.index("</table>", html.index('id="answer-table"'))]
    rows = re.findall(r"<tr class=\"(\w*)\">(.*?)</tr>", table, re.S)
    by_question = {must_search(r"<td>(.*?)</td>", body).group(1): (css, body) for css, body in rows}
    css, body = by_question["Question 0?"]
    assert css == "differs" and "lyon" in body and "Paris" in body and "differs from the reference" in body
    css, body = by_question["Question 1?"]
    assert css == "matches" and "matches the reference" in body
    css, body = by_question["Question 2?"]
    assert css == "" and "none recorded" in body
    assert "2 of these queries have reference answers" in html
    assert "the estimate matches 1 and differs from 1" in html


def test_the_source_list_puts_the_most_reliable_first_and_the_never_estimated_last(
    analyst_client: Any, world: Any
) -> None:
    SourceFactory(name="aaa-new")  # never estimated: last, whatever its name
    html = page(analyst_client, reverse("source-list"))
    table = html[html.index('id="source-table"') :]
    order = re.findall(r'<a href="/sources/\d+/">([^<]+)</a>', table)
    assert order == ["src-3", "src-2", "src-1", "src-0", "aaa-new"]
    by_name = page(analyst_client, reverse("source-list") + "?sort=name")
    order = re.findall(r'<a href="/sources/\d+/">([^<]+)</a>', by_name[by_name.index('id="source-table"') :])
    assert order == ["aaa-new", "src-0", "src-1", "src-2", "src-3"]
    assert 'href="?sort=name"' in html and 'href="?sort=reliability"' in html


def test_an_answer_that_matches_the_reference_is_not_shown_as_a_mistake(analyst_client: Any, world: Any) -> None:
    set_references(world, ["Paris"], ["blue"], ["4"])
    # src-0 said "paris" against the estimated "lyon": right, by the reference answer.
    right = page(analyst_client, reverse("source-detail", args=[world.sources[0].pk]))
    table = right[
        right.index('id="disagreement-table"') : right.index("</table>", right.index('id="disagreement-table"'))
    ]
    assert '<span class="good">paris</span> <span class="tag good">matches the reference</span>' in table
    assert '<span class="bad">paris</span>' not in table and 'class="bad">paris' not in table
    # src-2 said "5" against the estimated "4", and the reference says 4: wrong, shown as such.
    wrong = page(analyst_client, reverse("source-detail", args=[world.sources[2].pk]))
    assert '<span class="bad">5</span>' in wrong


# --- Estimation runs need three sources ---------------------------------------------------


@pytest.fixture
def demo_set(db: Any) -> Any:
    query_set = QueryCollectionFactory(name="demo")
    FactQueryFactory(query_set=query_set, question="Question?")
    return query_set


def test_the_service_refuses_a_run_over_fewer_than_three_sources_and_says_why(demo_set: Any) -> None:
    one, two, three = (SourceFactory(name=n, chunk_count=2) for n in ("one", "two", "three"))
    for chosen in ([one], [one, two], [one, one, two]):
        with pytest.raises(ValidationError) as caught:
            start_estimation_run(sources=chosen)
        message = caught.value.message_dict["sources"][0]
        assert "at least 3 sources" in message and "agrees with the other sources" in message
    assert not EstimationRun.objects.exists() and not Job.objects.exists()
    assert set(start_estimation_run(sources=[one, two, three]).sources.all()) == {one, two, three}


def test_every_active_source_is_refused_when_fewer_than_three_hold_documents(demo_set: Any) -> None:
    SourceFactory(name="one", chunk_count=2)
    SourceFactory(name="two", chunk_count=2)
    SourceFactory(name="retired", chunk_count=2, active=False)
    with pytest.raises(ValidationError) as caught:
        start_estimation_run(sources="all")
    assert "only 2 active sources with documents exist" in caught.value.message_dict["sources"][0]


def test_the_api_answers_400_naming_the_sources_field(as_curator: Any, demo_set: Any) -> None:
    ids = [SourceFactory(name=n, chunk_count=2).pk for n in ("one", "two")]
    response = as_curator.post("/api/estimation-runs/", {"sources": ids}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error["fields"]) == {"sources"}
    assert "at least 3 sources" in error["fields"]["sources"][0]
    assert not EstimationRun.objects.exists()


def test_the_run_form_says_a_run_needs_three_sources(curator_client: Any, demo_set: Any) -> None:
    ids = [SourceFactory(name=n, chunk_count=2).pk for n in ("one", "two")]
    form = page(curator_client, reverse("run-list"))
    assert "at least 3, or every active source" in form
    response = curator_client.post(reverse("run-start"), {"query_set": demo_set.pk, "sources": ids})
    assert response.status_code == 400
    assert "An estimation run needs at least 3 sources (2 were chosen)" in response.content.decode()
    assert not EstimationRun.objects.exists()


def test_the_run_form_refuses_a_query_set_that_does_not_exist_on_its_field(curator_client: Any, demo_set: Any) -> None:
    """Issue 38 row 13: an unknown query set used to start a run on the default (demo) set."""
    ids = [SourceFactory(name=n, chunk_count=2).pk for n in ("one", "two", "three")]
    for unknown in (str(demo_set.pk + 1000), "\uff11", "demo"):
        response = curator_client.post(reverse("run-start"), {"query_set": unknown, "sources": ids})
        assert response.status_code == 400
        assert "No such query set: choose one of the list." in response.content.decode()
    assert not EstimationRun.objects.exists()


# --- The conflicts page's default run ------------------------------------------------------


def single_source_run(world: Any) -> EstimationRun:
    """A newer run in which only one source answered: no pair of sources to draw."""
    run = EstimationRunFactory(succeeded=True, query_set=world.query_set, sources=[world.sources[0]])
    for query in world.queries:
        RunAnswerFactory(run=run, query=query, answer="paris")
        RunResponseFactory(run=run, query=query, source=world.sources[0], response="paris")
    ReliabilityScoreFactory(run=run, source=world.sources[0], reliability=0.8)
    return run


def test_the_conflicts_page_defaults_to_the_latest_run_with_a_shared_query(analyst_client: Any, world: Any) -> None:
    lonely = single_source_run(world)
    response = analyst_client.get(reverse("conflicts"))
    assert response.context["run"] == world.runs[1]
    html = response.content.decode()
    assert 'id="conflict-graph"' in html
    assert f"run #{lonely.pk} has no such pair" in html
    assert f"#{lonely.pk} · " in html and "(no shared answers)" in html
    # Asked for by name, the lonely run is shown, and the page says why there is no graph.
    named = page(analyst_client, reverse("conflicts") + f"?run={lonely.pk}")
    assert f"No two sources answered a shared query in run #{lonely.pk}" in named


def test_the_conflicts_page_says_so_when_no_run_has_a_shared_query(analyst_client: Any, db: Any) -> None:
    source = SourceFactory(name="alone")
    run = EstimationRunFactory(succeeded=True, sources=[source])
    RunResponseFactory(run=run, source=source)
    html = page(analyst_client, reverse("conflicts"))
    assert 'id="no-pairs-anywhere"' in html and "start a run over at least three sources" in html


# --- Admin ----------------------------------------------------------------------------------


def test_the_admin_is_branded_and_names_fact_queries_properly(admin_client: Any) -> None:
    html = page(admin_client, "/admin/")
    assert "Reliability-aware RAG administration" in html and "Django administration" not in html
    assert "Fact queries" in html and "Fact querys" not in html
    assert "Reliability-aware RAG admin</title>" in html
    assert 'rel="icon"' in html  # the admin's pages link the favicon too


def test_the_admin_shows_reliabilities_rounded(admin_client: Any) -> None:
    raw = 0.8043478260869565
    source = SourceFactory(name="wiki", reliability=raw, reliability_low=0.7012345, reliability_high=0.9098765)
    run = EstimationRunFactory(succeeded=True, sources=[source])
    ReliabilityScoreFactory(run=run, source=source, reliability=raw, weight=1.2345678)
    for url in (
        "/admin/sources/source/",
        f"/admin/sources/source/{source.pk}/change/",
        f"/admin/core/estimationrun/{run.pk}/change/",
    ):
        html = page(admin_client, url)
        assert "0.80" in html, url
        assert str(raw) not in html and "0.8043" not in html and "1.2345678" not in html, url


def test_a_source_links_to_uploading_documents_into_it_from_the_admin_and_the_dashboard(
    admin_client: Any, analyst_client: Any
) -> None:
    source = SourceFactory(name="wiki")
    upload = f"{reverse('admin:sources_source_upload')}?source={source.pk}"
    assert f'href="{upload}"' in page(admin_client, f"/admin/sources/source/{source.pk}/change/")
    assert "Upload documents to this source" in page(admin_client, reverse("source-detail", args=[source.pk]))
    assert upload not in page(analyst_client, reverse("source-detail", args=[source.pk]))  # analysts do not curate
    form = page(admin_client, upload)
    assert f'<option value="{source.pk}" selected>wiki</option>' in form


# --- Error pages, favicon, titles, dark mode, logout -------------------------------------------


def test_a_missing_page_is_styled_with_the_nav_and_the_product_title(analyst_client: Any) -> None:
    html = page(analyst_client, "/no/such/page/", status=404)
    assert title_of(html) == f"Page not found · {PRODUCT}"
    assert 'class="topbar"' in html and f'href="{reverse("source-list")}"' in html  # the nav
    assert "/no/such/page/" in html and "dashboard.css" in html


def test_a_forbidden_page_is_styled_with_the_nav_and_says_why(nobody_client: Any) -> None:
    html = page(nobody_client, reverse("source-list"), status=403)
    assert title_of(html) == f"Not allowed · {PRODUCT}"
    assert 'class="topbar"' in html and "This page is for analysts and curators." in html
    assert "Signed in as <strong>norole</strong>" in html


def test_the_server_error_page_renders_even_when_its_request_context_fails(db: Any) -> None:
    request = RequestFactory().get("/broken/")
    request.user = AnonymousUser()
    ok = server_error(request)
    assert ok.status_code == 500 and title_of(ok.content.decode()) == f"Server error · {PRODUCT}"

    def unreachable() -> Any:
        raise RuntimeError("the database is down")

    # The context processors cannot build a context. (As AuthenticationMiddleware does, a lazy
    # object stands in for the user; django-stubs types request.user as the resolved user.)
    request.user = SimpleLazyObject(unreachable)  # type: ignore[assignment]
    fallback = server_error(request)
    assert fallback.status_code == 500
    assert title_of(fallback.content.decode()) == f"Server error · {PRODUCT}"


def test_the_favicon_is_linked_and_served(analyst_client: Any, client: Any) -> None:
    html = page(analyst_client, reverse("ask"))
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    served = client.get("/static/favicon.svg")
    assert served.status_code == 200
    assert b"<svg" in b"".join(served.streaming_content if served.streaming else [served.content])
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"].endswith("/static/favicon.svg")


def test_every_page_title_names_the_page_and_the_product(analyst_client: Any, client: Any, world: Any) -> None:
    job = JobFactory(kind=Job.Kind.ASK, params={"question_id": world.question.pk})
    pages = {
        reverse("ask"): "Ask",
        reverse("history"): "History",
        reverse("question-detail", args=[world.question.pk]): f"Question #{world.question.pk}",
        reverse("source-list"): "Sources",
        reverse("source-detail", args=[world.sources[0].pk]): "src-0",
        reverse("run-list"): "Estimation runs",
        reverse("run-detail", args=[world.runs[0].pk]): f"Estimation run #{world.runs[0].pk}",
        reverse("conflicts"): "Conflicts",
        reverse("job-list"): "Jobs",
        reverse("claim-list"): "Claims",
    }
    for url, name in pages.items():
        assert title_of(page(analyst_client, url)) == f"{name} · {PRODUCT}", url
    job_title = title_of(page(analyst_client, reverse("job-detail", args=[job.pk])))
    assert job_title.startswith(f"Question #{world.question.pk}: ") and job_title.endswith(f" · {PRODUCT}")
    assert title_of(page(client, reverse("login"))) == f"Log in · {PRODUCT}"


def test_dark_mode_follows_the_system_setting() -> None:
    css = (Path(settings.BASE_DIR) / "static" / "css" / "dashboard.css").read_text()
    block = css[
        css.index("/* === issue 14: pages (H8) === */") : css.index("/* === end of issue 14: pages (H8) === */")
    ]
    dark = block[block.index("@media (prefers-color-scheme: dark)") :]
    assert "--bg:" in dark and "--fg:" in dark
    # Colours only: the dark block moves nothing.
    declarations = [d for body in re.findall(r"\{([^{}]*)\}", dark) for d in body.split(";") if d.strip()]
    properties = {d.split(":", 1)[0].strip() for d in declarations}
    colours = {"color-scheme", "background-color", "color", "stroke", "border-color"}
    assert {p for p in properties if not p.startswith("--")} <= colours, properties


def test_logging_out_is_confirmed(analyst_client: Any) -> None:
    confirm = page(analyst_client, reverse("logout"))
    assert 'id="logout-confirm"' in confirm and 'method="post"' in confirm
    assert analyst_client.get(reverse("ask")).status_code == 200  # asking is not logging out
    response = analyst_client.post(reverse("logout"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("login")
    assert "You have been logged out." in response.content.decode()
    assert analyst_client.get(reverse("ask")).status_code == 302  # signed out now


def test_a_job_whose_question_was_deleted_still_reads(analyst_client: Any) -> None:
    job = JobFactory(kind=Job.Kind.ASK, params={"question_id": 987654})
    assert "Question #987654 (deleted)" in page(analyst_client, reverse("job-detail", args=[job.pk]))


def test_every_main_page_has_one_top_heading(analyst_client: Any, world: Any) -> None:
    urls = [
        reverse("ask"),
        reverse("history"),
        reverse("question-detail", args=[world.question.pk]),
        reverse("source-list"),
        reverse("source-detail", args=[world.sources[0].pk]),
        reverse("run-list"),
        reverse("run-detail", args=[world.runs[0].pk]),
        reverse("conflicts"),
        reverse("job-list"),
        reverse("claim-list"),
    ]
    for url in urls:
        assert page(analyst_client, url).count("<h1") == 1, url
