"""Estimation batches are safe on many workers: claimed, idempotent, counted once; the run's
progress shows from the coordinator's first step; the estimate is computed once.

"Another worker" is a second PostgreSQL connection (psycopg, outside Django) that holds an
advisory lock, or a second thread with its own Django connection."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import connection, connections

from core.engine.types import Embedder
from core.models import EstimationRun, ReliabilityScore, RunResponse
from core.services.estimation import (
    RunProgress,
    coordinate_run,
    finish_once,
    generate_batch,
    missing_pairs,
)
from core.services.estimation.locks import batch_claim_name, finish_claim_name
from runtime.locks import lock_key
from tasks.models import Job
from tasks.progress import JobProgress
from tests.corpus import FACTS, build_corpus
from tests.factories import EstimationRunFactory, JobFactory
from tests.helpers import as_list, wait_until


@contextmanager
def held_elsewhere(name: str) -> Iterator[None]:
    """Another session (another worker's connection) holds the advisory lock `name`."""
    s = connection.settings_dict
    other = psycopg.connect(
        dbname=s["NAME"],
        user=s["USER"],
        password=s["PASSWORD"],
        host=s["HOST"],
        port=s["PORT"] or None,
        autocommit=True,
    )
    pid = other.info.backend_pid
    try:
        other.execute("SELECT pg_advisory_lock(%s)", [lock_key(name)])
        yield
    finally:
        other.close()  # a closed session drops its locks, as a dead worker's does
        # ...once its backend has exited, which the server does after the client has gone.
        with connection.cursor() as cursor:

            def gone() -> bool:
                # pg_stat_activity is a snapshot kept until the end of the transaction (the
                # test's): without clearing it, a backend seen once is seen for ever.
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute("SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = %s)", [pid])
                return bool(cursor.fetchone()[0])

            wait_until(gone, 10, f"backend {pid} to exit")


def new_run(embedder, **params) -> EstimationRun:
    good, bad, query_set = build_corpus(embedder)
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING)
    return EstimationRunFactory(
        job=job, query_set=query_set, sources=[*good, bad], state=EstimationRun.State.RUNNING, params=params
    )


def test_a_batch_another_worker_holds_is_left_to_it_and_runs_once_released(db, embedder):
    run = new_run(embedder)
    pairs = missing_pairs(run)[:4]
    with held_elsewhere(batch_claim_name(run.pk, pairs)):
        assert generate_batch(run.pk, [list(p) for p in pairs]) == 0
        assert not RunResponse.objects.filter(run=run).exists()
        other = missing_pairs(run)[4:6]  # a different batch of the same run is not held
        assert generate_batch(run.pk, [list(p) for p in other]) == 2
    assert generate_batch(run.pk, [list(p) for p in reversed(pairs)]) == 4  # the same batch, in any order
    assert RunResponse.objects.filter(run=run).count() == 6


def test_batches_run_again_or_overlapping_keep_one_response_per_pair_the_first_stored(db, embedder):
    run = new_run(embedder)
    pairs = missing_pairs(run)
    assert generate_batch(run.pk, [list(p) for p in pairs[:5]]) == 5
    first = dict(RunResponse.objects.filter(run=run).values_list("id", "response"))
    ids_before = set(first)
    assert generate_batch(run.pk, [list(p) for p in pairs[:5]]) == 0  # a redelivered message
    assert generate_batch(run.pk, [list(p) for p in pairs[3:8]]) == 3  # overlapping: only the new pairs
    stored = RunResponse.objects.filter(run=run)
    assert stored.count() == 8 == len(set(stored.values_list("query_id", "source_id")))
    assert ids_before <= set(stored.values_list("id", flat=True))
    assert dict(stored.filter(id__in=ids_before).values_list("id", "response")) == first


def test_two_workers_given_the_same_batches_at_once_answer_each_pair_once(transactional_db, embedder):
    run = new_run(embedder, batch_size=4)
    pairs = [list(p) for p in missing_pairs(run)]
    answered: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def worker() -> None:
        try:
            start.wait()
            for i in range(0, len(pairs), 4):  # both go through every batch, in the same order
                answered.append(generate_batch(run.pk, pairs[i : i + 4]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not errors, errors
    stored = RunResponse.objects.filter(run=run)
    assert sum(answered) == len(pairs) == stored.count() == len(FACTS) * 4  # no pair answered twice
    assert len(set(stored.values_list("query_id", "source_id"))) == len(pairs)


def test_the_coordinator_s_first_step_shows_progress_and_batches_raise_it_to_the_stored_count(
    db: None, embedder: Embedder
) -> None:
    run = new_run(embedder, batch_size=8)
    assert run.job_id is not None
    progress = JobProgress(run.job_id)
    step = coordinate_run(run, None, progress)
    units = RunProgress(len(FACTS) * 4)
    job = Job.objects.get(pk=run.job_id)
    assert job.progress_total == units.total and job.progress_current == units.phase and job.percent > 0
    assert job.message.startswith("Answering: 0 of 24 responses stored; 3 batch(es) sent")
    assert [len(b) for b in step.send] == [8, 8, 8]

    generate_batch(run.pk, step.send[1], progress)
    job.refresh_from_db()
    assert job.progress_current == units.answering(8) and job.message == "Answering: 8 of 24 responses stored"
    progress.advance_to(units.answering(3), "an older count")  # a slower batch reporting late
    job.refresh_from_db()
    assert job.progress_current == units.answering(8)


def test_the_estimate_is_computed_once_and_not_while_another_worker_computes_it(db: None, embedder: Embedder) -> None:
    run = new_run(embedder)
    generate_batch(run.pk, [list(p) for p in missing_pairs(run)])
    with held_elsewhere(finish_claim_name(run.pk)):
        assert finish_once(run) is None
        assert not ReliabilityScore.objects.filter(run=run).exists()
    summary = finish_once(run)
    assert summary is not None, "nobody else holds the claim now"
    run.refresh_from_db()
    assert run.state == EstimationRun.State.SUCCEEDED and summary["responses"] == len(FACTS) * 4
    scores = list(ReliabilityScore.objects.filter(run=run).values_list("id", flat=True))
    again = finish_once(run)  # a second coordinator step, after the first stored the estimate
    assert again is not None, "the stored estimate's summary"
    assert list(ReliabilityScore.objects.filter(run=run).values_list("id", flat=True)) == scores
    by_source = {s["source"]: s for s in as_list(summary["scores"])}
    assert {s["source"]: s for s in as_list(again["scores"])} == by_source
    assert {k: v for k, v in again.items() if k != "scores"} == {k: v for k, v in summary.items() if k != "scores"}
