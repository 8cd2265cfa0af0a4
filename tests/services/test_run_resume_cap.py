"""Resuming a run counts against ESTIMATION_MAX_CONCURRENT_PER_USER like starting one: the
service, the API and the button on the run page refuse a resume past the cap, for full and
claim-level runs, and start no job. Runs a user resumed count against their cap."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from core.models import EstimationRun
from core.services.estimation import TooManyRuns, resume_claim_run, resume_estimation_run
from tasks.models import Job
from tests.factories import EstimationRunFactory, FactQueryFactory, JobFactory, SourceFactory


def failed_run(owner: Any, kind: str = EstimationRun.Kind.FULL) -> EstimationRun:
    """A failed run of `owner` under a failed job, over one query (full runs) and one source."""
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.FAILED, finished_at=timezone.now())
    extra = {"query_set": None} if kind == EstimationRun.Kind.CLAIMS else {}
    run = EstimationRunFactory(
        kind=kind,
        job=job,
        state=EstimationRun.State.FAILED,
        created_by=owner,
        sources=[SourceFactory(chunk_count=1)],
        **extra,
    )
    if run.query_set_id is not None:
        FactQueryFactory(query_set=run.query_set)
    return run


def in_progress(user: Any) -> int:
    return EstimationRun.objects.filter(created_by=user, state__in=["pending", "running"]).count()


def test_the_api_refuses_a_third_resume_with_429_naming_the_limit(as_curator: Any, curator: Any) -> None:
    runs = [failed_run(curator) for _ in range(4)]
    for run in runs[:2]:
        assert as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json").status_code == 202
    jobs = Job.objects.count()
    for run in runs[2:]:
        response = as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json")
        assert response.status_code == 429
        error = response.json()["error"]
        assert error["code"] == "too_many_runs"
        assert "at most 2 at once (ESTIMATION_MAX_CONCURRENT_PER_USER)" in error["message"]
        run.refresh_from_db()
        assert run.state == EstimationRun.State.FAILED
    assert Job.objects.count() == jobs and in_progress(curator) == 2


def test_a_resume_counts_against_the_same_cap_as_a_start(as_curator: Any, curator: Any, settings: Any) -> None:
    settings.ESTIMATION_MAX_CONCURRENT_PER_USER = 1
    EstimationRunFactory(created_by=curator, state=EstimationRun.State.RUNNING)  # one started, in progress
    run = failed_run(curator)
    assert as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json").status_code == 429
    settings.ESTIMATION_MAX_CONCURRENT_PER_USER = 2
    assert as_curator.post(f"/api/estimation-runs/{run.pk}/resume/", {}, format="json").status_code == 202


def test_runs_a_user_resumed_count_against_their_cap_whoever_started_them(db: Any, curator: Any) -> None:
    # Runs the CLI started (no user): the curator resumes two, so both are now theirs to count.
    resumed = [resume_estimation_run(failed_run(None), user=curator) for _ in range(2)]
    assert all(run.state == EstimationRun.State.PENDING for run in resumed)
    with pytest.raises(TooManyRuns) as caught:
        resume_estimation_run(failed_run(None), user=curator)
    assert "You already have 2 estimation run(s) in progress" in caught.value.message_dict["runs"][0]


def test_claim_runs_are_capped_on_resume_too(db: Any, curator: Any) -> None:
    for _ in range(2):
        resume_claim_run(failed_run(curator, EstimationRun.Kind.CLAIMS), user=curator)
    third = failed_run(curator, EstimationRun.Kind.CLAIMS)
    with pytest.raises(TooManyRuns):
        resume_claim_run(third, user=curator)
    third.refresh_from_db()
    assert third.job is not None
    assert third.state == EstimationRun.State.FAILED and third.job.state == Job.State.FAILED


def test_the_cli_resumes_without_a_cap(db: Any, curator: Any) -> None:
    runs = [failed_run(curator) for _ in range(3)]
    assert [resume_estimation_run(run).state for run in runs] == [EstimationRun.State.PENDING] * 3


def test_the_resume_button_past_the_cap_says_why_and_starts_nothing(curator_client: Any, curator: Any) -> None:
    runs = [failed_run(curator) for _ in range(3)]
    for run in runs[:2]:
        curator_client.post(f"/runs/{run.pk}/resume/")
    jobs = Job.objects.count()
    response = curator_client.post(f"/runs/{runs[2].pk}/resume/", follow=True)
    assert response.redirect_chain == [(f"/runs/{runs[2].pk}/", 302)]
    assert "at most 2 at once (ESTIMATION_MAX_CONCURRENT_PER_USER)" in response.content.decode()
    runs[2].refresh_from_db()
    assert runs[2].state == EstimationRun.State.FAILED and Job.objects.count() == jobs
