"""Bulk work that must never starve questions nor be taken for dead (issue 25): a long claim
store keeps its job alive, two claim loads never embed the same keys twice nor both claim
the sources they created, uploads that no job will read are deleted, and a waiting question
says why it waits."""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from core.engine.claims.mapping import ClaimMapping
from runtime.locks import lock_key
from sources import claim_loading as claim_service
from sources.claim_store import EMBED_CLAIM, embed_claim_keys
from sources.models import ClaimKey, Source
from tasks.jobs import reap_stale_jobs
from tasks.models import Job
from tasks.progress import JobProgress
from tests.factories import ClaimFactory, QuestionFactory
from tests.helpers import must_search

ROOT = Path(__file__).resolve().parents[2]
MAPPING = ClaimMapping.from_json({"subject": "flight", "source": "src", "attributes": {"gate": "text"}})
CSV = b"flight,src,gate\nAA-1,alpha,B1\nAA-1,beta,B2\nUA-9,gamma,C3\n"


def running_job(**fields: Any) -> Job:
    now = timezone.now()
    return Job.objects.create(kind=Job.Kind.INGEST, state=Job.State.RUNNING, started_at=now, heartbeat_at=now, **fields)


def test_a_claim_store_longer_than_the_stale_limit_keeps_its_job_alive(transactional_db, settings, monkeypatch):
    """The store runs in one transaction: a heartbeat written from inside it would not be
    seen until the commit. The reaper, looking in the middle of a store three times longer
    than the stale limit, must find the job alive."""
    settings.JOB_STALE_SECONDS = 0.4  # heartbeats every 0.1 s
    job = running_job()
    real_upsert = claim_service._upsert

    def slow_upsert(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.2)
        return real_upsert(*args, **kwargs)

    monkeypatch.setattr(claim_service, "_upsert", slow_upsert)
    reaped: list[int] = []

    def reap_midway() -> None:
        time.sleep(0.8)
        try:
            reaped.append(reap_stale_jobs())
        finally:
            connection.close()

    reaper = threading.Thread(target=reap_midway)
    reaper.start()
    result = claim_service.load_claims([("f.csv", CSV)], MAPPING, progress=JobProgress(job.pk))
    reaper.join()
    job.refresh_from_db()
    assert reaped == [0]
    assert job.state == Job.State.RUNNING
    assert result.created == 3


def test_two_loads_naming_the_same_new_sources_at_once_claim_each_source_once(transactional_db, monkeypatch):
    """The second load's insert waits for the first's commit: only the first created them."""
    real_upsert = claim_service._upsert
    first_inside = threading.Event()

    def slow_upsert(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "first-load":
            first_inside.set()
            time.sleep(1.0)  # holding the new sources' rows, uncommitted
        return real_upsert(*args, **kwargs)

    monkeypatch.setattr(claim_service, "_upsert", slow_upsert)
    outcomes: dict[str, int] = {}

    def load(name: str) -> None:
        try:
            outcomes[name] = claim_service.load_claims([("f.csv", CSV)], MAPPING).sources_created
        finally:
            connection.close()

    first = threading.Thread(target=load, args=("first-load",), name="first-load")
    first.start()
    assert first_inside.wait(10)
    second = threading.Thread(target=load, args=("second-load",), name="second-load")
    second.start()
    first.join()
    second.join()
    assert outcomes == {"first-load": 3, "second-load": 0}
    assert Source.objects.filter(name__in=["alpha", "beta", "gamma"]).count() == 3


def test_a_second_embedding_job_leaves_the_keys_to_the_one_already_embedding(db, embedder):
    ClaimFactory(subject="AA-1", attribute="gate")
    held = threading.Event()
    release = threading.Event()

    def hold_the_lock() -> None:  # another worker's job, embedding right now
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [lock_key(EMBED_CLAIM)])
                held.set()
                release.wait(10)
                cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_key(EMBED_CLAIM)])
        finally:
            connection.close()

    other = threading.Thread(target=hold_the_lock)
    other.start()
    try:
        assert held.wait(10)
        outcome = embed_claim_keys(embedder, exclusive=True)
        skipped = outcome["skipped"]
        assert outcome["keys"] == 0 and isinstance(skipped, str) and "another job is embedding" in skipped
        assert not ClaimKey.objects.exists()
    finally:
        release.set()
        other.join()
    assert embed_claim_keys(embedder, exclusive=True)["keys"] == 1  # free again: this one embeds
    assert ClaimKey.objects.filter(subject="AA-1", attribute="gate").exists()


def test_the_reaper_deletes_the_uploads_of_failed_jobs_and_orphans_but_never_a_waiting_jobs(db, settings, tmp_path):
    settings.UPLOAD_DIR = tmp_path / "uploads"
    settings.JOB_STALE_SECONDS = 60
    folders = {name: settings.UPLOAD_DIR / name for name in ("stale", "waiting", "orphan", "fresh")}
    for folder in folders.values():
        folder.mkdir(parents=True)
        (folder / "0000-claims.csv").write_bytes(CSV)
    old = time.time() - 3600
    for name in ("stale", "waiting", "orphan"):
        os.utime(folders[name], (old, old))
    stale = running_job(params={"upload_dir": str(folders["stale"])})
    Job.objects.filter(pk=stale.pk).update(heartbeat_at=timezone.now() - dt.timedelta(hours=1))
    Job.objects.create(kind=Job.Kind.INGEST, params={"upload_dir": str(folders["waiting"])})  # pending

    assert reap_stale_jobs() == 1
    assert sorted(p.name for p in settings.UPLOAD_DIR.iterdir()) == ["fresh", "waiting"]


@pytest.mark.django_db
def test_a_waiting_question_says_how_many_are_ahead_and_what_the_question_worker_is_doing(analyst, analyst_client):
    def question(state: str, age_s: float) -> Any:
        q = QuestionFactory(asked_by=analyst)
        job = Job.objects.create(kind=Job.Kind.ASK, state=state)
        Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - dt.timedelta(seconds=age_s))
        q.job = job
        q.save(update_fields=["job"])
        return q

    question(Job.State.RUNNING, 60)
    question(Job.State.PENDING, 50)
    question(Job.State.PENDING, 40)
    mine = question(Job.State.PENDING, 30)
    page = analyst_client.get(f"/questions/{mine.pk}/panel/").content.decode()
    assert "Waiting for the question worker: 1 question being answered, 2 more ahead of this one" in page

    Job.objects.exclude(pk=mine.job_id).delete()
    page = analyst_client.get(f"/questions/{mine.pk}/panel/").content.decode()
    assert "No question worker has taken this question in 3" in page and "is the question worker running?" in page


def test_run_sh_gives_questions_a_worker_of_their_own_that_no_bulk_queue_reaches() -> None:
    script = (ROOT / "scripts" / "run.sh").read_text()
    starts = re.findall(r"celery (?:-A|--app) reliability_site worker[^&]*&", script)
    assert len(starts) == 2
    queues = {}
    for command in starts:
        queues[command] = must_search(r"(?:-Q|--queues) (\S+)", command).group(1).strip('"')
    question_worker = next(c for c, q in queues.items() if q == "default")
    bulk = next(c for c in starts if c != question_worker)
    assert "--concurrency 1" in question_worker and " -B " not in question_worker
    assert queues[bulk] == "$queues" and re.search(r"^queues=ingest,gpu$", script, flags=re.MULTILINE)
    # ... and in every profile, not only with a local LLM: neither start is inside an `if`.
    assert re.search(r"^\.venv/bin/celery --app reliability_site worker --queues default ", script, flags=re.MULTILINE)
    # The bulk worker at a lower CPU priority (BULK_WORKER_NICE): questions get the cores first.
    assert re.search(
        r'^nice -n "\$\{BULK_WORKER_NICE:-19\}" \.venv/bin/celery -A reliability_site worker -Q ',
        script,
        flags=re.MULTILINE,
    )
