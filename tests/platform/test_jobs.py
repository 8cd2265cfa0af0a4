"""Job records through the real Celery worker: states, progress, failures, reaping, status page."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from sources.services import start_ingest_job
from tasks.jobs import fail_jobs_of_worker, reap_stale_jobs, start_job, wait_for_job
from tasks.models import Job
from tasks.progress import JobProgress
from tasks.runner import Done, JobFailed, Reschedule, job_task
from tests.factories import JobFactory, SourceFactory


@job_task("tests.platform.count_to")
def count_to(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    """Reports progress step by step and records the state it saw while running."""
    seen = Job.objects.get(pk=progress.job_id).state
    progress.set_total(params["n"], "Counting")
    for i in range(params["n"]):
        progress.advance(1, f"at {i + 1}")
    progress.log("counted")
    return {"seen_state": seen, "counted": params["n"]}


@job_task("tests.platform.explode")
def explode(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    progress.set_total(4)
    progress.advance(1)
    raise RuntimeError("the disk caught fire")


@job_task("tests.platform.give_up")
def give_up(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    progress.set_total(3)
    progress.advance(2)
    raise JobFailed("2 of 3 steps done, the third was refused", {"done": 2})


@job_task("tests.platform.come_back")
def come_back(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any] | Reschedule:
    """Asks to be run again until it has been visited `visits` times, keeping count in its params."""
    visit = params.get("visited", 0) + 1
    progress.set_total(params["visits"])
    progress.set_progress(visit, f"visit {visit}")
    progress.log(f"visit {visit}")
    if visit < params["visits"]:
        return Reschedule(countdown=params.get("countdown", 0.05), params={**params, "visited": visit})
    return {"visited": visit, "seen_state": Job.objects.get(pk=progress.job_id).state}


db_visits: list[int] = []


@job_task("tests.platform.survive_db_blip", db_retry=True)
def survive_db_blip(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    """Loses the database on its first visit (as a coordinator does when PostgreSQL restarts)."""
    db_visits.append(progress.job_id)
    if len(db_visits) == 1:
        from django.db import OperationalError

        raise OperationalError("server closed the connection unexpectedly")
    return {"visits": len(db_visits)}


@job_task("tests.platform.die_on_db_blip")
def die_on_db_blip(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    from django.db import OperationalError

    raise OperationalError("server closed the connection unexpectedly")


failures_seen: list[tuple[int, dict[str, Any], str, str]] = []


def remember_failure(job_id: int, params: dict[str, Any], error: BaseException | str) -> None:
    failures_seen.append((job_id, params, str(error), Job.objects.get(pk=job_id).state))


@job_task("tests.platform.come_back_and_explode", on_failure=remember_failure)
def come_back_and_explode(progress: JobProgress, params: dict[str, Any]) -> Reschedule:
    if params.get("visited"):
        raise RuntimeError("the second visit went wrong")
    return Reschedule(countdown=0.05, params={"visited": 1})


@job_task("tests.platform.with_a_message")
def with_a_message(progress: JobProgress, params: dict[str, Any]) -> Done:
    return Done({"ok": True}, message="Counted everything")


def test_a_job_goes_from_pending_through_running_to_succeeded_with_full_progress(worker):
    job = start_job(Job.Kind.OTHER, count_to, {"n": 5})
    assert job.state == Job.State.PENDING and job.percent == 0
    job = wait_for_job(job.pk, timeout=60, poll=0.1)
    assert job.state == Job.State.SUCCEEDED
    assert job.result == {"seen_state": "running", "counted": 5}
    assert (job.progress_current, job.progress_total, job.percent) == (5, 5, 100)
    assert job.started_at and job.finished_at and job.started_at <= job.finished_at
    assert job.worker and job.error == ""
    assert job.log[-1].endswith("counted")


def test_a_task_that_raises_ends_failed_with_the_error(worker):
    job = wait_for_job(start_job(Job.Kind.OTHER, explode, {}).pk, timeout=60, poll=0.1)
    assert job.state == Job.State.FAILED
    assert job.error == "RuntimeError: the disk caught fire"
    assert job.message == "Failed: RuntimeError: the disk caught fire"
    assert job.finished_at is not None
    assert job.percent == 25  # progress stays where the failure happened


def test_job_failed_keeps_the_partial_result(worker):
    job = wait_for_job(start_job(Job.Kind.OTHER, give_up, {}).pk, timeout=60, poll=0.1)
    assert job.state == Job.State.FAILED
    assert job.error == "2 of 3 steps done, the third was refused"
    assert job.result == {"done": 2}


def test_a_job_that_reschedules_itself_stays_running_with_its_new_params_and_then_succeeds(worker):
    job = start_job(Job.Kind.OTHER, come_back, {"visits": 2, "countdown": 1.5})
    deadline = timezone.now() + dt.timedelta(seconds=60)
    while not job.params.get("visited") and not job.finished and timezone.now() < deadline:
        job.refresh_from_db()
    assert job.params == {"visits": 2, "countdown": 1.5, "visited": 1}
    assert job.state == Job.State.RUNNING and job.finished_at is None  # between the two visits
    started_at = job.started_at
    job = wait_for_job(job.pk, timeout=60, poll=0.1)
    assert job.state == Job.State.SUCCEEDED, job.error
    assert job.result == {"visited": 2, "seen_state": "running"}
    assert job.params == {"visits": 2, "countdown": 1.5, "visited": 1}  # what the last Reschedule stored
    assert [line.split(" ", 1)[1] for line in job.log] == ["visit 1", "visit 2"]
    assert job.started_at == started_at and (job.progress_current, job.percent) == (2, 100)


def test_a_rescheduled_job_that_then_raises_ends_failed_and_calls_its_failure_hook(worker):
    failures_seen.clear()
    job = wait_for_job(start_job(Job.Kind.OTHER, come_back_and_explode, {}).pk, timeout=60, poll=0.1)
    assert job.state == Job.State.FAILED
    assert job.error == "RuntimeError: the second visit went wrong"
    assert job.params == {"visited": 1}
    assert failures_seen == [(job.pk, {"visited": 1}, "the second visit went wrong", Job.State.FAILED)]


def test_a_job_can_succeed_with_a_message_of_its_own(worker):
    job = wait_for_job(start_job(Job.Kind.OTHER, with_a_message, {}).pk, timeout=60, poll=0.1)
    assert (job.state, job.result, job.message) == (Job.State.SUCCEEDED, {"ok": True}, "Counted everything")


def test_ingesting_a_path_that_does_not_exist_fails_the_job_naming_the_path(worker, tmp_path):
    source = SourceFactory(name="nowhere")
    missing = tmp_path / "missing.txt"
    job = wait_for_job(start_ingest_job(source, [missing]).pk, timeout=60, poll=0.1)
    assert job.state == Job.State.FAILED
    assert job.error == f"{missing}: no such file or folder"
    assert source.documents.count() == 0


def test_a_finished_job_is_not_run_again_when_its_task_is_redelivered(worker):
    job = wait_for_job(start_job(Job.Kind.OTHER, count_to, {"n": 2}).pk, timeout=60, poll=0.1)
    finished_at = job.finished_at
    count_to.apply(kwargs={"job_id": job.pk})  # a redelivery, run in this process
    job.refresh_from_db()
    assert job.finished_at == finished_at and job.state == Job.State.SUCCEEDED


def running_job(worker_name: str = "celery@host-a", heartbeat_age_s: float = 0) -> Job:
    now = timezone.now()
    return JobFactory(
        state=Job.State.RUNNING,
        worker=worker_name,
        started_at=now - dt.timedelta(seconds=heartbeat_age_s + 1),
        heartbeat_at=now - dt.timedelta(seconds=heartbeat_age_s),
    )


def test_reaping_fails_running_jobs_with_an_old_heartbeat_and_leaves_fresh_ones_alone(db, settings):
    settings.JOB_STALE_SECONDS = 600
    stale = running_job(heartbeat_age_s=3600)
    fresh = running_job(heartbeat_age_s=5)
    finished = JobFactory(state=Job.State.SUCCEEDED, heartbeat_at=timezone.now() - dt.timedelta(days=1))
    assert reap_stale_jobs() == 1
    for job in (stale, fresh, finished):
        job.refresh_from_db()
    assert stale.state == Job.State.FAILED
    assert "stopped reporting for more than 600 s" in stale.error
    assert stale.finished_at is not None
    assert fresh.state == Job.State.RUNNING and fresh.error == ""
    assert finished.state == Job.State.SUCCEEDED
    assert reap_stale_jobs() == 0


def test_a_restarted_worker_fails_only_its_own_running_jobs(db):
    mine = running_job("celery@host-a")
    other = running_job("celery@host-b")
    pending = JobFactory(worker="celery@host-a")
    assert fail_jobs_of_worker("celery@host-a", "The worker restarted") == 1
    for job in (mine, other, pending):
        job.refresh_from_db()
    assert (mine.state, mine.error, mine.message) == (
        Job.State.FAILED,
        "The worker restarted",
        "Failed: worker restarted",
    )
    assert other.state == Job.State.RUNNING
    assert pending.state == Job.State.PENDING


def test_progress_helpers_write_through_to_the_job_record(db):
    job = JobFactory()
    progress = JobProgress(job.pk)
    progress.start(total=10, message="go", worker="celery@w1")
    progress.advance(3)
    progress.advance(2, "halfway")
    job.refresh_from_db()
    assert (job.state, job.progress_current, job.progress_total, job.percent, job.message, job.worker) == (
        Job.State.RUNNING,
        5,
        10,
        50,
        "halfway",
        "celery@w1",
    )
    progress.set_progress(7)
    progress.succeed({"ok": True})
    job.refresh_from_db()
    assert (job.state, job.progress_current, job.percent, job.result) == (Job.State.SUCCEEDED, 10, 100, {"ok": True})


def test_the_job_log_keeps_only_the_newest_lines(db, monkeypatch):
    monkeypatch.setattr("tasks.progress.MAX_LOG_LINES", 3)
    job = JobFactory()
    progress = JobProgress(job.pk)
    for i in range(5):
        progress.log(f"line {i}")
    job.refresh_from_db()
    assert [entry.split(" ", 1)[1] for entry in job.log] == ["line 2", "line 3", "line 4"]


@pytest.mark.parametrize(
    "state, expected",
    [(Job.State.PENDING, 200), (Job.State.RUNNING, 200), (Job.State.SUCCEEDED, 286), (Job.State.FAILED, 286)],
)
def test_the_status_partial_tells_htmx_to_stop_polling_once_the_job_has_finished(admin_client, state, expected):
    job = JobFactory(state=state, heartbeat_at=timezone.now(), message="Hello")
    response = admin_client.get(f"/jobs/{job.pk}/status/")
    assert response.status_code == expected


def test_viewing_the_job_pages_never_reaps_a_stale_job(admin_client, settings):
    settings.JOB_STALE_SECONDS = 60
    job = running_job(heartbeat_age_s=3600)
    assert admin_client.get("/jobs/").status_code == 200
    response = admin_client.get(f"/jobs/{job.pk}/status/")
    assert response.status_code == 200  # still running: htmx keeps polling
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING and job.error == ""  # the worker's reaper ends it, not a page view


def test_the_job_pages_need_a_login(client, db):
    job = JobFactory()
    response = client.get(f"/jobs/{job.pk}/status/")
    assert response.status_code == 302 and "/login" in response["Location"]


def test_a_job_failed_by_the_database_shows_a_plain_message_and_logs_the_detail(db, caplog):
    from django.db import OperationalError

    job = JobFactory(state=Job.State.RUNNING)
    raw = "index row size 3000 exceeds btree version 4 maximum 2704 for index claim_unique_item_per_source"
    with caplog.at_level("ERROR", logger="tasks.progress"):
        assert JobProgress(job.pk).fail(OperationalError(raw))
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    assert "btree" not in job.error and "btree" not in job.message
    assert job.error.startswith("The database refused part of the work") and f"(job {job.pk})" in job.error
    assert raw in caplog.text  # the technical detail, for staff


def test_a_coordinator_that_loses_the_database_runs_again_later_instead_of_failing(worker, monkeypatch):
    """Issue 38 row 5: the estimation coordinator died on an OperationalError when the
    embedded PostgreSQL stopped for 50 s; a task with db_retry runs the step again with
    backoff and the job goes on (the estimation coordinator has it)."""
    from tasks import runner

    monkeypatch.setattr(runner, "DB_RETRY_SECONDS", 0.2)
    db_visits.clear()
    job = wait_for_job(start_job(Job.Kind.OTHER, survive_db_blip, {}).pk, timeout=60, poll=0.1)
    assert job.state == Job.State.SUCCEEDED, job.error
    assert job.result == {"visits": 2} and db_visits == [job.pk, job.pk]
    # Without db_retry the error ends the job as any other error would.
    failed = wait_for_job(start_job(Job.Kind.OTHER, die_on_db_blip, {}).pk, timeout=60, poll=0.1)
    assert failed.state == Job.State.FAILED and "The database refused part of the work" in failed.error
