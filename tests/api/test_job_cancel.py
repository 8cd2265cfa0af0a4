"""Cancelling a job (issue 38 row 11): who started it or a curator, from its page and the API;
the job ends at once, its run is marked failed (resumable), and its worker's next heartbeat
says to stop."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from core.models import EstimationRun
from tasks.models import Job
from tasks.progress import JobProgress
from tests.factories import AnalystFactory, EstimationRunFactory
from tests.helpers import token_client


def running_run(owner: Any) -> tuple[EstimationRun, Job]:
    job = Job.objects.create(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING, created_by=owner, message="Answering")
    run = EstimationRunFactory(state=EstimationRun.State.RUNNING, job=job, created_by=owner)
    return run, job


def test_who_started_a_job_cancels_it_through_the_api_and_its_worker_is_told_to_stop(analyst, as_analyst):
    run, job = running_run(analyst)
    progress = JobProgress(job.pk)
    assert progress.heartbeat("batch 3") is True
    response = as_analyst.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 200, response.content[:300]
    assert response.json()["state"] == "failed" and response.json()["message"] == f"Cancelled by {analyst.username}"
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.state == Job.State.FAILED and job.finished_at is not None and "Cancelled by" in job.error
    assert run.state == EstimationRun.State.FAILED  # resumable from what it stored
    assert progress.heartbeat("batch 4") is False  # the worker stops at its next batch
    progress.succeed({"items": 1})
    job.refresh_from_db()
    assert job.state == Job.State.FAILED  # a late finish does not overwrite the cancellation
    assert as_analyst.post(f"/api/jobs/{job.pk}/cancel/").status_code == 409


def test_someone_elses_job_is_refused_unless_a_curator_cancels_it(analyst, curator, as_curator):
    other = AnalystFactory(username="bob")
    _, job = running_run(other)
    response = token_client(analyst).post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 403
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING
    assert as_curator.post(f"/api/jobs/{job.pk}/cancel/").status_code == 200
    job.refresh_from_db()
    assert job.state == Job.State.FAILED and job.message == f"Cancelled by {curator.username}"


def test_the_job_page_offers_cancel_to_who_started_it_and_cancels_on_post(analyst, analyst_client):
    _, job = running_run(analyst)
    page = analyst_client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert 'id="job-cancel"' in page
    other = AnalystFactory(username="bob")
    client = Client()
    client.force_login(other)
    assert 'id="job-cancel"' not in client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert client.post(reverse("job-cancel", args=[job.pk])).status_code == 403
    assert analyst_client.get(reverse("job-cancel", args=[job.pk])).status_code == 405
    response = analyst_client.post(reverse("job-cancel", args=[job.pk]), follow=True)
    assert response.status_code == 200 and "was cancelled" in response.content.decode()
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    assert 'id="job-cancel"' not in analyst_client.get(reverse("job-detail", args=[job.pk])).content.decode()


def test_a_job_whose_run_has_just_succeeded_is_not_cancelled(analyst, as_analyst):
    run, job = running_run(analyst)
    EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.SUCCEEDED)  # the worker stored it
    assert as_analyst.post(f"/api/jobs/{job.pk}/cancel/").status_code == 409
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.state == Job.State.RUNNING and run.state == EstimationRun.State.SUCCEEDED  # they still agree
