"""Jobs stay truthful when work is long, workers die or the database goes away: heartbeats
during long work, the worker's reaper (on start and on a beat schedule), runs that follow
their job, jobs that never flip from failed to succeeded, unique worker names."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from django.db import OperationalError
from django.utils import timezone

from core.engine.types import Embedder
from core.models import EstimationRun
from reliability_site.celery import app, reap_interval
from sources.ingest.base import ParsedDocument
from sources.models import Chunk, Document
from sources.services import (
    EMBED_CHUNKS_PER_HEARTBEAT as BATCH,
)
from sources.services import (
    FileOutcome,
    IngestInterrupted,
    ingest_files,
    start_ingest_job,
    store_documents,
)
from tasks import progress as progress_module
from tasks.engine_tasks import generate_batch
from tasks.jobs import reap_stale_jobs, wait_for_job
from tasks.models import Job
from tasks.progress import JobProgress
from tasks.signals import _fail_jobs_left_running
from tasks.tasks import ingest_files as ingest_task
from tests.corpus import build_corpus
from tests.factories import EstimationRunFactory, JobFactory, SourceFactory

ROOT = Path(__file__).resolve().parents[2]


def running_job(kind: str = Job.Kind.OTHER, worker: str = "worker-a@host", heartbeat_age_s: float = 0) -> Job:
    now = timezone.now()
    return JobFactory(
        kind=kind,
        state=Job.State.RUNNING,
        worker=worker,
        started_at=now - dt.timedelta(seconds=heartbeat_age_s + 1),
        heartbeat_at=now - dt.timedelta(seconds=heartbeat_age_s),
    )


class RandomEmbedder:
    """Unit vectors of the right size at once, recording each call's batch size."""

    name = "random-test-embedder"
    dimension = 384

    def __init__(self) -> None:
        self.calls: list[int] = []

    def encode(self, texts, batch_size: int = 64):
        self.calls.append(len(texts))
        rng = np.random.default_rng(len(self.calls))
        vectors = rng.normal(size=(len(texts), self.dimension)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def long_documents(n: int, tag: str) -> list[ParsedDocument]:
    """n documents of about 560 words each (6 chunks each at 120/20 words)."""
    return [
        ParsedDocument(
            text=" ".join(f"Record {tag} {i} fact {j} says the measured value is {i * 100 + j}." for j in range(70)),
            title=f"{tag} {i}",
        )
        for i in range(n)
    ]


# --- A run's state follows its job ----------------------------------------------------


def test_reaping_a_stale_estimation_job_fails_its_run_so_it_can_be_resumed(db, settings):
    settings.JOB_STALE_SECONDS = 60
    stale = running_job(Job.Kind.ESTIMATE, heartbeat_age_s=3600)
    run = EstimationRunFactory(job=stale, state=EstimationRun.State.RUNNING)
    alive = running_job(Job.Kind.ESTIMATE, heartbeat_age_s=5)
    live_run = EstimationRunFactory(job=alive, state=EstimationRun.State.RUNNING)
    assert reap_stale_jobs() == 1
    run.refresh_from_db()
    live_run.refresh_from_db()
    assert run.state == EstimationRun.State.FAILED and run.finished_at is not None
    assert live_run.state == EstimationRun.State.RUNNING


def test_a_restarted_worker_fails_the_runs_of_its_own_jobs_and_nothing_of_other_workers(db):
    mine = running_job(Job.Kind.ESTIMATE, worker="worker-1a2b@host")
    mine_run = EstimationRunFactory(job=mine, state=EstimationRun.State.RUNNING)
    same_host = running_job(Job.Kind.ESTIMATE, worker="worker-9f9f@host")
    other_run = EstimationRunFactory(job=same_host, state=EstimationRun.State.RUNNING)
    _fail_jobs_left_running(sender=SimpleNamespace(hostname="worker-1a2b@host"))
    for record in (mine, mine_run, same_host, other_run):
        record.refresh_from_db()
    assert (mine.state, mine.message) == (Job.State.FAILED, "Failed: worker restarted")
    assert mine_run.state == EstimationRun.State.FAILED
    assert same_host.state == Job.State.RUNNING and other_run.state == EstimationRun.State.RUNNING


def test_a_worker_start_without_a_node_name_fails_no_job(db):
    import socket

    recorded_under_host = running_job(worker=socket.gethostname())
    _fail_jobs_left_running(sender=SimpleNamespace(hostname=None))
    recorded_under_host.refresh_from_db()
    assert recorded_under_host.state == Job.State.RUNNING


def test_a_run_never_shows_running_under_a_job_that_has_ended(db, as_analyst, analyst_client):
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.FAILED, finished_at=timezone.now())
    run = EstimationRunFactory(job=job, state=EstimationRun.State.RUNNING)
    assert as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()["state"] == "failed"
    listed = as_analyst.get("/api/estimation-runs/").json()["results"]
    assert [r["state"] for r in listed if r["id"] == run.pk] == ["failed"]
    response = analyst_client.get(f"/runs/{run.pk}/result/")
    assert response.status_code == 286  # htmx stops polling: the run has ended
    assert b'data-state="failed"' in response.content
    assert b"state-failed" in analyst_client.get("/runs/").content


# --- Success and failure are final ----------------------------------------------------


def test_a_job_that_succeeds_clears_the_error_it_carried(db):
    job = running_job()
    Job.objects.filter(pk=job.pk).update(error="an earlier attempt failed")
    assert JobProgress(job.pk).succeed({"ok": True}) is True
    job.refresh_from_db()
    assert (job.state, job.error, job.result) == (Job.State.SUCCEEDED, "", {"ok": True})


def test_a_job_marked_failed_stays_failed_when_its_work_finishes_later_and_its_log_says_so(db, settings):
    settings.JOB_STALE_SECONDS = 60
    job = running_job(heartbeat_age_s=3600)
    reap_stale_jobs()
    assert JobProgress(job.pk).succeed({"documents": 3}, message="Stored 3 documents") is False
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    assert "stopped reporting" in job.error and job.message == "Failed: worker lost"
    assert "the work finished (Stored 3 documents) after the job had ended" in job.log[-1]
    assert "'documents': 3" in job.log[-1]


def test_a_later_failure_of_an_ended_job_keeps_its_first_error_and_logs_the_second(db):
    job = running_job()
    progress = JobProgress(job.pk)
    progress.fail("the first thing went wrong")
    assert progress.fail(RuntimeError("and then another")) is False
    progress.advance(5, "progress after the end")
    job.refresh_from_db()
    assert (job.state, job.error) == (Job.State.FAILED, "the first thing went wrong")
    assert job.message == "Failed: the first thing went wrong" and job.progress_current == 0
    assert job.log[-1].endswith("the work failed after the job had ended: RuntimeError: and then another")


def test_a_job_s_failure_is_recorded_once_the_database_answers_again(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = running_job()
    waits: list[float] = []
    monkeypatch.setattr("tasks.progress.time.sleep", waits.append)
    real_update = JobProgress._update
    outage = {"left": 3}

    def flaky_update(self, **fields):
        if outage["left"]:
            outage["left"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return real_update(self, **fields)

    monkeypatch.setattr(JobProgress, "_update", flaky_update)
    assert JobProgress(job.pk).fail("big.csv: the database failed") is True
    job.refresh_from_db()
    assert (job.state, job.error) == (Job.State.FAILED, "big.csv: the database failed")
    assert waits == [0.5, 1.0, 2.0]  # a growing, bounded backoff
    assert sum(progress_module.FINAL_WRITE_BACKOFF) < 300


def test_the_failure_write_gives_up_after_its_bounded_backoff(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = running_job()
    waits: list[float] = []
    monkeypatch.setattr("tasks.progress.time.sleep", waits.append)

    def down(self, **fields):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(JobProgress, "_update", down)
    with pytest.raises(OperationalError):
        JobProgress(job.pk).fail("lost")
    assert waits == list(progress_module.FINAL_WRITE_BACKOFF)


# --- Heartbeats during long work ------------------------------------------------------


def test_a_big_file_is_embedded_in_batches_with_a_heartbeat_after_each_and_stored_in_one_piece(db):
    source = SourceFactory(name="big")
    embedder = RandomEmbedder()
    beats: list[tuple[int, int]] = []
    outcome = store_documents(
        source,
        long_documents(200, "big"),
        embedder,
        chunk_size=120,
        chunk_overlap=20,
        outcome=FileOutcome(name="big.csv"),
        on_embedded=lambda done, total: beats.append((done, total)),
    )
    total = outcome.chunks
    assert total > 4 * BATCH and max(embedder.calls) <= BATCH
    assert beats == [(min(n, total), total) for n in range(BATCH, total + BATCH, BATCH)]
    assert Chunk.objects.filter(source=source).count() == total and outcome.documents == 200


def test_ingestion_reports_each_embedded_batch_as_a_heartbeat_naming_the_file(db, tmp_path):
    source = SourceFactory(name="reports")
    rows = ["title,text"] + [f"r{i},{long_documents(1, str(i))[0].text}" for i in range(100)]
    (tmp_path / "big.csv").write_text("\n".join(rows) + "\n")
    messages: list[str] = []
    ingest_files(source, [tmp_path / "big.csv"], RandomEmbedder(), heartbeat=messages.append)
    total = Chunk.objects.filter(source=source).count()
    assert total > 2 * BATCH
    assert messages == [
        f"big.csv: embedded {min(n, total)} of {total} chunks" for n in range(BATCH, total + BATCH, BATCH)
    ]


def test_a_database_failure_mid_file_stores_nothing_of_that_file_keeps_the_earlier_ones_and_names_it(db, tmp_path):
    source = SourceFactory(name="outage")
    (tmp_path / "a.txt").write_text("Honey never spoils.")
    (tmp_path / "b.csv").write_text(
        "\n".join(["title,text"] + [f"r{i},{long_documents(1, str(i))[0].text}" for i in range(100)]) + "\n"
    )
    (tmp_path / "c.txt").write_text("Water boils at 100 degrees.")

    def heartbeat(message: str) -> None:
        if message.startswith(f"b.csv: embedded {BATCH} "):
            raise OperationalError("server closed the connection unexpectedly")

    paths = [tmp_path / "a.txt", tmp_path / "b.csv", tmp_path / "c.txt"]
    with pytest.raises(IngestInterrupted) as caught:
        ingest_files(source, paths, RandomEmbedder(), heartbeat=heartbeat)
    assert str(caught.value).startswith("b.csv: the database failed while this file was being stored")
    assert "OperationalError: server closed the connection unexpectedly" in str(caught.value)
    assert [o.name for o in caught.value.outcomes] == ["a.txt"]
    assert list(Document.objects.filter(source=source).values_list("text", flat=True)) == ["Honey never spoils."]
    source.refresh_from_db()
    assert source.chunk_count == Chunk.objects.filter(source=source).count() == 1


class ClockedEmbedder:
    """Embeds in `seconds_per_batch` of a test clock (no real waiting) and runs the reaper
    between batches, as beat would while a long file embeds on a worker."""

    name = "clocked-test-embedder"
    dimension = 384

    def __init__(self, clock: list[dt.datetime], seconds_per_batch: float) -> None:
        self.clock = clock
        self.step = dt.timedelta(seconds=seconds_per_batch)
        self.batches = 0
        self.reaped = 0
        self.vectors = RandomEmbedder()

    def encode(self, texts, batch_size: int = 64):
        self.clock[0] += self.step
        self.batches += 1
        self.reaped += reap_stale_jobs(now=self.clock[0])
        return self.vectors.encode(texts)


def run_ingestion_on_a_clock(settings, monkeypatch, tmp_path, seconds_per_batch: float) -> tuple[Job, ClockedEmbedder]:
    """The ingest task run in this process on a test clock that moves only while a batch embeds."""
    settings.UPLOAD_DIR = tmp_path / "uploads"  # the reaper clears orphan upload folders: never the real ones
    clock = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    embedder = ClockedEmbedder(clock, seconds_per_batch)
    monkeypatch.setattr("tasks.tasks.configured_embedder", lambda: embedder)
    source = SourceFactory(name="long")
    rows = ["title,text"] + [f"r{i},{long_documents(1, str(i))[0].text}" for i in range(200)]
    (tmp_path / "long.csv").write_text("\n".join(rows) + "\n")
    started = start_ingest_job(source, [tmp_path / "long.csv"])  # enqueued only on commit: never, in this test
    ingest_task.apply(kwargs={"job_id": started.pk})
    return Job.objects.get(pk=started.pk), embedder


def test_a_long_ingestion_is_never_reaped_while_it_embeds_and_ends_succeeded_without_an_error(
    db, settings, monkeypatch, tmp_path
):
    """Each batch of EMBED_CHUNKS_PER_HEARTBEAT chunks takes 4 s of the clock and the file four times that, longer than
    JOB_STALE_SECONDS: only the heartbeat after each batch keeps the reaper away."""
    settings.JOB_STALE_SECONDS = 6
    job, embedder = run_ingestion_on_a_clock(settings, monkeypatch, tmp_path, seconds_per_batch=4)
    assert embedder.batches >= 3 and embedder.batches * 4 > settings.JOB_STALE_SECONDS
    assert embedder.reaped == 0
    assert (job.state, job.error) == (Job.State.SUCCEEDED, "")
    assert job.result["chunks"] == Chunk.objects.filter(source=job.params["source_id"]).count() > 1024


def test_an_ingestion_whose_batch_outlasts_the_stale_time_is_reaped_and_stores_nothing_more(
    db, settings, monkeypatch, tmp_path
):
    settings.JOB_STALE_SECONDS = 6
    job, embedder = run_ingestion_on_a_clock(settings, monkeypatch, tmp_path, seconds_per_batch=10)
    assert embedder.reaped == 1 and embedder.batches == 1  # the first heartbeat finds the job ended: no more batches
    assert (job.state, job.message) == (Job.State.FAILED, "Failed: worker lost")
    assert not Chunk.objects.filter(source=job.params["source_id"]).exists()


def test_an_estimation_batch_is_a_heartbeat_of_its_run_s_job(db: None, embedder: Embedder) -> None:
    good, bad, query_set = build_corpus(embedder, reliable=1)
    an_hour_ago = timezone.now() - dt.timedelta(hours=1)
    job = running_job(Job.Kind.ESTIMATE, heartbeat_age_s=3600)
    run = EstimationRunFactory(job=job, query_set=query_set, sources=[good[0], bad], state=EstimationRun.State.RUNNING)
    query = query_set.queries.order_by("id").first()
    assert query is not None
    assert generate_batch.apply(kwargs={"run_id": run.pk, "pairs": [[query.pk, bad.pk]]}).get() == 1
    job.refresh_from_db()
    assert job.heartbeat_at is not None and job.heartbeat_at > an_hour_ago + dt.timedelta(minutes=59)
    assert job.state == Job.State.RUNNING


# --- The reaper runs in the worker ----------------------------------------------------


def test_beat_sends_the_reaper_a_quarter_of_the_stale_time_apart_and_at_most_every_minute():
    entry = app.conf.beat_schedule["reap-stale-jobs"]
    assert entry["task"] == "tasks.reap_stale_jobs"
    assert (reap_interval(900), reap_interval(100), reap_interval(10)) == (60.0, 25.0, 5.0)
    assert "tasks.reap_stale_jobs" in app.tasks


@pytest.mark.worker
def test_the_worker_reaps_stale_jobs_when_beat_sends_the_reaper(worker, settings):
    settings.JOB_STALE_SECONDS = 60
    stale = running_job(Job.Kind.ESTIMATE, heartbeat_age_s=3600)
    run = EstimationRunFactory(job=stale, state=EstimationRun.State.RUNNING)
    app.send_task("tasks.reap_stale_jobs")
    stale = wait_for_job(stale.pk, timeout=60, poll=0.1)
    run.refresh_from_db()
    assert (stale.state, stale.message) == (Job.State.FAILED, "Failed: worker lost")
    assert run.state == EstimationRun.State.FAILED


def test_run_sh_starts_its_worker_with_beat_and_a_node_name_of_its_own_each_time():
    script = (ROOT / "scripts" / "run.sh").read_text()
    (naming,) = re.findall(r"^worker_name=.*$", script, flags=re.MULTILINE)
    names = {
        subprocess.run(
            ["bash", "-c", f'{naming}; echo "$worker_name"'], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(3)
    }
    assert len(names) == 3 and all(re.fullmatch(r"worker-[0-9a-f]{12}@%h", n) for n in names)
    (command,) = re.findall(r"celery -A reliability_site worker[^&]*&", script)
    assert '-n "$worker_name"' in command and " -B " in command
