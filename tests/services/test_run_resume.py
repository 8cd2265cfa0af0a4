"""Resuming a failed or interrupted estimation run: the service's rules, the CLI, the API
and the button on the run page; a resumed run finishes reusing its stored responses."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from core.models import EstimationRun, RunResponse
from core.services.estimation import generate_batch, missing_pairs, resume_estimation_run
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.corpus import FACTS, build_corpus
from tests.factories import EstimationRunFactory, FactQueryFactory, JobFactory, SourceFactory


def run_in(state: str, job_state: str | None) -> EstimationRun:
    """A run in `state` under a job in `job_state` (None: no job), over one query and source."""
    job = None
    if job_state is not None:
        ended = job_state in (Job.State.SUCCEEDED, Job.State.FAILED)
        job = JobFactory(kind=Job.Kind.ESTIMATE, state=job_state, finished_at=timezone.now() if ended else None)
    run = EstimationRunFactory(job=job, state=state, sources=[SourceFactory(chunk_count=1)])
    FactQueryFactory(query_set=run.query_set)
    return run


def failed_run() -> EstimationRun:
    return run_in(EstimationRun.State.FAILED, Job.State.FAILED)


# --- The service ----------------------------------------------------------------------


def test_a_running_run_is_not_resumed(db):
    run = run_in(EstimationRun.State.RUNNING, Job.State.RUNNING)
    with pytest.raises(ValidationError) as caught:
        resume_estimation_run(run)
    assert caught.value.message_dict["run"][0].startswith(f"Run #{run.pk} is still running (job {run.job_id})")
    assert Job.objects.count() == 1


def test_a_succeeded_run_is_not_resumed_unless_asked_to_re_estimate(db):
    run = run_in(EstimationRun.State.SUCCEEDED, Job.State.SUCCEEDED)
    with pytest.raises(ValidationError) as caught:
        resume_estimation_run(run)
    assert caught.value.message_dict["run"] == [
        f"Run #{run.pk} already succeeded: there is nothing to resume. Ask to re-estimate it to compute "
        "its estimate again from its stored responses."
    ]
    assert resume_estimation_run(run, reestimate=True).state == EstimationRun.State.PENDING


# --- The CLI --------------------------------------------------------------------------


def test_the_estimate_command_resumes_a_failed_run_under_a_new_job(
    db: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run = failed_run()
    old_job = run.job_id
    call_command("estimate", resume=run.pk)
    run.refresh_from_db()
    assert run.job_id != old_job and run.finished_at is None
    assert run.job is not None
    assert run.state == EstimationRun.State.PENDING and run.job.state == Job.State.PENDING
    assert (run.job.kind, run.job.params) == ("estimate", {"run_id": run.pk})
    assert f"Estimation run {run.pk} resumed (job {run.job_id})" in capsys.readouterr().out


def test_the_estimate_command_says_why_a_run_cannot_be_resumed(db):
    running = run_in(EstimationRun.State.RUNNING, Job.State.RUNNING)
    with pytest.raises(CommandError, match=f"Run #{running.pk} is still running"):
        call_command("estimate", resume=running.pk)
    succeeded = run_in(EstimationRun.State.SUCCEEDED, Job.State.SUCCEEDED)
    with pytest.raises(CommandError, match="already succeeded"):
        call_command("estimate", resume=succeeded.pk)
    call_command("estimate", resume=succeeded.pk, reestimate=True)
    with pytest.raises(CommandError, match="No estimation run #999999"):
        call_command("estimate", resume=999999)


# --- The API --------------------------------------------------------------------------


def test_a_curator_resumes_a_failed_run_through_the_api_and_gets_202_with_the_job(as_curator):
    run = failed_run()
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json")
    assert response.status_code == 202
    body = response.json()
    run.refresh_from_db()
    assert body["job"] == run.job_id and body["run"]["id"] == run.pk and body["run"]["state"] == "pending"
    assert body["status_url"].endswith(f"/api/jobs/{run.job_id}/") and response["Location"] == body["status_url"]


def test_an_analyst_may_not_resume_a_run(as_analyst):
    run = failed_run()
    assert as_analyst.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json").status_code == 403
    run.refresh_from_db()
    assert run.state == EstimationRun.State.FAILED


def test_resuming_a_running_or_succeeded_run_through_the_api_is_a_conflict(as_curator):
    running = run_in(EstimationRun.State.RUNNING, Job.State.RUNNING)
    response = as_curator.post(f"/api/estimation-runs/{running.pk}/resume/", {}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert response.json()["error"]["message"].startswith(f"Run #{running.pk} is still running")
    succeeded = run_in(EstimationRun.State.SUCCEEDED, Job.State.SUCCEEDED)
    response = as_curator.post(f"/api/estimation-runs/{succeeded.pk}/resume/", {}, format="json")
    assert response.status_code == 409 and "already succeeded" in response.json()["error"]["message"]
    again = as_curator.post(f"/api/estimation-runs/{succeeded.pk}/resume/", {"reestimate": True}, format="json")
    assert again.status_code == 202


def test_resuming_an_unknown_run_is_404_and_an_unknown_option_is_400(as_curator):
    assert as_curator.post("/api/estimation-runs/999999/resume/", {}, format="json").status_code == 404
    run = failed_run()
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {"force": True}, format="json")
    assert response.status_code == 400


# --- The run page ---------------------------------------------------------------------


def test_a_curator_sees_a_resume_button_with_a_csrf_token_on_a_failed_run(curator_client):
    run = failed_run()
    page = curator_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="resume-form"' in page and f'hx-post="/runs/{run.pk}/resume/"' in page
    form = page[page.index('id="resume-form"') :]
    assert 'name="csrfmiddlewaretoken"' in form[: form.index("</form>")]


def test_an_analyst_sees_no_resume_button_and_may_not_post_one(analyst_client):
    run = failed_run()
    assert 'id="resume-form"' not in analyst_client.get(f"/runs/{run.pk}/").content.decode()
    assert analyst_client.post(f"/runs/{run.pk}/resume/").status_code == 403
    run.refresh_from_db()
    assert run.state == EstimationRun.State.FAILED


def test_a_run_left_running_under_a_failed_job_shows_failed_with_the_resume_button(curator_client: Client) -> None:
    run = run_in(EstimationRun.State.RUNNING, Job.State.FAILED)
    page = curator_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-state="failed"' in page and 'id="resume-form"' in page
    curator_client.post(f"/runs/{run.pk}/resume/")
    run.refresh_from_db()
    assert run.job is not None
    assert run.state == EstimationRun.State.PENDING and run.job.state == Job.State.PENDING


def test_no_resume_button_while_a_run_is_running(curator_client):
    run = run_in(EstimationRun.State.RUNNING, Job.State.RUNNING)
    assert 'id="resume-form"' not in curator_client.get(f"/runs/{run.pk}/").content.decode()


def test_the_resume_button_resumes_the_run_and_htmx_goes_back_to_its_page(curator_client: Client) -> None:
    run = failed_run()
    response = curator_client.post(f"/runs/{run.pk}/resume/", HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"] == f"/runs/{run.pk}/"
    run.refresh_from_db()
    assert run.job is not None
    assert run.state == EstimationRun.State.PENDING and run.job.state == Job.State.PENDING
    page = curator_client.get(f"/runs/{run.pk}/").content.decode()
    assert "resumed" in page


def test_the_resume_button_on_a_running_run_says_why_nothing_happened(curator_client):
    run = run_in(EstimationRun.State.RUNNING, Job.State.RUNNING)
    response = curator_client.post(f"/runs/{run.pk}/resume/", follow=True)
    assert response.redirect_chain == [(f"/runs/{run.pk}/", 302)]
    assert f"Run #{run.pk} is still running" in response.content.decode()


# --- Through the worker ---------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
def test_an_interrupted_run_resumed_through_the_api_finishes_reusing_its_stored_responses(worker, embedder, as_curator):
    good, bad, query_set = build_corpus(embedder, reliable=2)
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING)
    run = EstimationRunFactory(
        job=job, query_set=query_set, sources=[*good, bad], state=EstimationRun.State.RUNNING, params={"batch_size": 5}
    )
    generate_batch(run.pk, [list(p) for p in missing_pairs(run)[:7]])  # what it stored before its worker died
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED, finished_at=timezone.now())  # reaped
    before = set(RunResponse.objects.filter(run=run).values_list("id", flat=True))
    assert len(before) == 7

    response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json")
    assert response.status_code == 202
    job = wait_for_job(response.json()["job"], timeout=240)
    assert job.state == Job.State.SUCCEEDED, job.error
    run.refresh_from_db()
    stored = RunResponse.objects.filter(run=run)
    assert run.state == EstimationRun.State.SUCCEEDED and stored.count() == len(FACTS) * 3
    assert before <= set(stored.values_list("id", flat=True))
    assert as_curator.get(f"/api/estimation-runs/{run.pk}/").json()["scores"]
