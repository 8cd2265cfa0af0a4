"""Estimation runs on the real database through the real worker."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest
import pytest_django
from django.core.exceptions import ValidationError
from django.utils import timezone

from core.engine.backends.generation.extractive import ExtractiveReader
from core.models import EstimationRun, ReliabilityScore, RunAnswer, RunResponse
from core.services.estimation import (
    QueryGenerationUnavailable,
    RunProgress,
    coordinate_run,
    dispatch_json,
    dispatch_state,
    generate_queries,
    resume_estimation_run,
    start_estimation_run,
)
from tasks.engine_tasks import generate_batch
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.corpus import FACTS, build_corpus
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    JobFactory,
    QueryCollectionFactory,
    RunResponseFactory,
    SourceFactory,
)


def run_to_end(run: EstimationRun) -> EstimationRun:
    assert run.job_id is not None, "the run was queued"
    job = wait_for_job(run.job_id, timeout=240)
    assert job.state == Job.State.SUCCEEDED, job.error
    run.refresh_from_db()
    return run


def test_a_run_scores_the_misinformation_source_below_the_sources_that_agree_and_is_idempotent(worker, embedder):
    good, bad, query_set = build_corpus(embedder)
    run = run_to_end(start_estimation_run(sources="all", params={"batch_size": 7}))
    assert run.state == EstimationRun.State.SUCCEEDED and run.query_set == query_set
    n_pairs = len(FACTS) * 4
    assert RunResponse.objects.filter(run=run).count() == n_pairs
    assert run.job is not None
    assert run.job.percent == 100 and run.job.progress_current == run.job.progress_total
    assert run.job.progress_total == RunProgress(n_pairs).total > n_pairs  # preparing, each pair, estimating
    scores = {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    assert set(scores) == {"reliable-0", "reliable-1", "reliable-2", "misinformer"}
    for source in good:
        assert scores[source.name].reliability > scores["misinformer"].reliability
        assert scores[source.name].weight > scores["misinformer"].weight
    bad.refresh_from_db()
    assert bad.reliability == pytest.approx(scores["misinformer"].reliability)
    assert bad.reliability_answers == scores["misinformer"].answers > 0
    answers = dict(RunAnswer.objects.filter(run=run).values_list("query__question", "answer"))
    assert answers["What is the capital of France?"] == "Paris"
    assert RunResponse.objects.filter(run=run, source=bad, agrees=False).exists()

    before = list(RunResponse.objects.filter(run=run).order_by("id").values_list("id", flat=True))
    run = run_to_end(resume_estimation_run(run, reestimate=True))
    assert list(RunResponse.objects.filter(run=run).order_by("id").values_list("id", flat=True)) == before
    assert ReliabilityScore.objects.filter(run=run).count() == 4
    assert run.job is not None and run.job.result["responses"] == n_pairs


def test_a_run_resumes_where_it_stopped_and_only_generates_missing_pairs(worker, embedder):
    build_corpus(embedder, reliable=2)
    run = run_to_end(start_estimation_run(sources="all"))
    RunResponse.objects.filter(run=run, query__question__startswith="Who").delete()
    kept = set(RunResponse.objects.filter(run=run).values_list("id", flat=True))
    run = run_to_end(resume_estimation_run(run, reestimate=True))
    assert RunResponse.objects.filter(run=run).count() == len(FACTS) * 3
    assert kept <= set(RunResponse.objects.filter(run=run).values_list("id", flat=True))


def test_a_run_uses_the_estimator_it_names_and_stores_the_chunks_each_source_read(worker, embedder, settings):
    settings.RELIABILITY_ESTIMATOR = "iwmv"  # the estimator of runs that name none
    good, bad, _ = build_corpus(embedder)
    run = run_to_end(start_estimation_run(sources="all", params={"estimator": "truthfinder"}))
    assert run.params["estimator"] == "truthfinder"
    scores = {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    for source in good:
        assert scores[source.name].reliability > scores["misinformer"].reliability
    iwmv = run_to_end(start_estimation_run(sources="all"))
    assert iwmv.params["estimator"] == "iwmv"
    truthfinder_scores = sorted(s.reliability for s in scores.values())
    iwmv_scores = sorted(ReliabilityScore.objects.filter(run=iwmv).values_list("reliability", flat=True))
    assert truthfinder_scores != pytest.approx(iwmv_scores), "the two estimators are different algorithms"
    read = RunResponse.objects.filter(run=run).values_list("chunk_ids", flat=True)
    assert all(ids and all(isinstance(i, int) for i in ids) for ids in read)


def test_an_unknown_estimator_is_refused_naming_the_choices(db):
    query_set = QueryCollectionFactory(name="demo")
    FactQueryFactory(query_set=query_set)
    with pytest.raises(ValidationError) as caught:
        start_estimation_run(sources=[SourceFactory(chunk_count=1)], params={"estimator": "astrology"})
    assert "iwmv" in caught.value.message_dict["estimator"][0]
    assert EstimationRun.objects.count() == 0


def test_starting_a_run_without_queries_or_with_empty_sources_names_the_fields(db):
    with pytest.raises(ValidationError) as caught:
        start_estimation_run()
    assert set(caught.value.message_dict) == {"query_set", "sources"}
    empty_set = QueryCollectionFactory(name="empty")
    with pytest.raises(ValidationError) as caught:
        start_estimation_run(
            query_set=empty_set, sources=[SourceFactory(name="nothing")], params={"batch_size": 0, "bogus": 1}
        )
    assert set(caught.value.message_dict) == {"query_set", "sources", "batch_size", "params"}
    assert EstimationRun.objects.count() == 0 and Job.objects.count() == 0


def test_generating_queries_offline_says_an_llm_backend_is_needed(db):
    query_set = QueryCollectionFactory(name="generated")
    with pytest.raises(QueryGenerationUnavailable, match="LLM backend"):
        generate_queries([], query_set, ExtractiveReader())


def test_generating_queries_with_an_llm_makes_a_question_and_a_yes_no_claim_check(db):
    from core.engine.backends.generation.base import Capability, Generation, GenerationRequest
    from tests.factories import DocumentFactory

    class FakeLlm:
        name = "openai:fake"
        capabilities = frozenset({Capability.FREE_TEXT})

        def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
            outputs = []
            for r in requests:
                assert r.prompt is not None, "query generation sends its own prompt"
                asks_for_a_question = "QUESTION" in r.prompt.upper().split("\n")[0]
                text = (
                    "Question: What causes COVID-19?\nAnswer: SARS-CoV-2"
                    if asks_for_a_question
                    else "COVID-19 is caused by SARS-CoV-2"
                )
                outputs.append(Generation(text, self.name))
            return outputs

    doc = DocumentFactory(text="COVID-19 is caused by the SARS-CoV-2 virus.")
    query_set = QueryCollectionFactory(name="generated")
    made = generate_queries([doc], query_set, FakeLlm())
    assert [(q.question, q.origin) for q in made] == [
        ("What causes COVID-19?", "generated"),
        ("Is it true that COVID-19 is caused by SARS-CoV-2?", "yes-no"),
    ]
    assert made[0].reference_answers == ["SARS-CoV-2"] and made[0].document == doc
    assert generate_queries([doc], query_set, FakeLlm()) == []  # already held


def test_the_coordinator_sends_the_missing_pairs_waits_while_batches_move_and_resends_after_a_stall(db, settings):
    settings.ESTIMATION_STALL_SECONDS = 60
    a, b = SourceFactory(name="a"), SourceFactory(name="b")
    run = EstimationRunFactory(sources=[a, b], params={"batch_size": 3})
    q1, q2 = FactQueryFactory(query_set=run.query_set), FactQueryFactory(query_set=run.query_set)
    t0 = timezone.now()

    def at(seconds: float) -> dt.datetime:
        return t0 + dt.timedelta(seconds=seconds)

    first = coordinate_run(run, None, now=t0)
    assert first.status == "waiting" and not first.finished
    assert first.send == [[[q1.pk, a.pk], [q1.pk, b.pk]], [[q2.pk, a.pk], [q2.pk, b.pk]]]  # a query's pairs together
    assert first.dispatch == {"stored": 0, "at": t0.timestamp(), "batches": 2, "resends": 0}
    run.refresh_from_db()
    assert run.state == EstimationRun.State.RUNNING

    quiet = coordinate_run(run, first.dispatch, now=at(30))
    assert (quiet.send, quiet.dispatch) == ([], first.dispatch)

    RunResponseFactory(run=run, query=q1, source=a)
    moving = coordinate_run(run, first.dispatch, now=at(40))
    assert (moving.send, moving.dispatch) == ([], {"stored": 1, "at": at(40).timestamp(), "batches": 2, "resends": 0})

    stalled = coordinate_run(run, moving.dispatch, now=at(101))
    assert stalled.send == [[[q1.pk, b.pk], [q2.pk, a.pk], [q2.pk, b.pk]]]
    assert stalled.dispatch == {"stored": 1, "at": at(101).timestamp(), "batches": 1, "resends": 1}

    for query, source in ((q1, b), (q2, a), (q2, b)):
        RunResponseFactory(run=run, query=query, source=source)
    done = coordinate_run(run, stalled.dispatch, now=at(102))
    assert done.finished and done.send == []


def test_a_coordinator_whose_batches_nobody_takes_stalls_after_its_resends_unless_bulk_work_reports(
    db: None, settings: pytest_django.Settings
) -> None:
    """Its own heartbeat is no sign that the batches are answered: with nothing stored after
    the batches were sent ESTIMATION_MAX_RESENDS more times, the step says "stalled" and why;
    while the bulk worker reports other work (an ingestion ahead of the batches in its queue)
    it waits without sending copies; progress starts the count again."""
    settings.ESTIMATION_STALL_SECONDS, settings.ESTIMATION_MAX_RESENDS = 60, 2
    source = SourceFactory(name="a")
    run = EstimationRunFactory(sources=[source], params={"batch_size": 1})
    q1, q2 = FactQueryFactory(query_set=run.query_set), FactQueryFactory(query_set=run.query_set)
    t0 = timezone.now()

    def at(seconds: float) -> dt.datetime:
        return t0 + dt.timedelta(seconds=seconds)

    step = coordinate_run(run, None, now=t0)
    busy = coordinate_run(run, step.dispatch, now=at(61), bulk_work_reporting=lambda: True)
    assert busy.status == "waiting" and busy.send == []
    assert busy.dispatch == {**step.dispatch, "at": at(61).timestamp()}  # type: ignore[dict-item]
    resent = [coordinate_run(run, step.dispatch, now=at(122), bulk_work_reporting=lambda: False)]
    resent.append(coordinate_run(run, resent[0].dispatch, now=at(183), bulk_work_reporting=lambda: False))
    assert [(len(r.send), r.dispatch["resends"] if r.dispatch else None) for r in resent] == [(2, 1), (2, 2)]
    assert coordinate_run(run, resent[1].dispatch, now=at(200)).status == "waiting"  # not yet a stall
    stalled = coordinate_run(run, resent[1].dispatch, now=at(244), bulk_work_reporting=lambda: False)
    assert stalled.stalled and stalled.send == []
    assert "sent 3 times (0 of 2 stored): no worker is taking them" in stalled.reason
    assert "resume this run" in stalled.reason

    RunResponseFactory(run=run, query=q1, source=source)
    moving = coordinate_run(run, resent[1].dispatch, now=at(250))
    assert moving.status == "waiting" and moving.dispatch is not None and moving.dispatch["resends"] == 0
    assert dispatch_state(dispatch_json(moving.dispatch)) == moving.dispatch
    # A state stored before resends were counted reads as none yet.
    assert dispatch_state({"stored": 1, "at": 5.0, "batches": 2}) == {
        "stored": 1,
        "at": 5.0,
        "batches": 2,
        "resends": 0,
    }
    del q2


def test_the_bulk_worker_reports_through_a_fresh_ingestion_or_a_response_stored_lately(
    db: None, settings: pytest_django.Settings
) -> None:
    from tasks.jobs import bulk_work_reporting

    settings.JOB_STALE_SECONDS, settings.ESTIMATION_STALL_SECONDS = 60, 60
    assert not bulk_work_reporting()
    old = timezone.now() - dt.timedelta(seconds=120)
    JobFactory(kind=Job.Kind.INGEST, state=Job.State.RUNNING, heartbeat_at=old)
    JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING, heartbeat_at=timezone.now())  # its coordinator's
    assert not bulk_work_reporting()
    JobFactory(kind=Job.Kind.INGEST, state=Job.State.RUNNING, heartbeat_at=timezone.now())
    assert bulk_work_reporting()
    Job.objects.filter(kind=Job.Kind.INGEST).update(state=Job.State.SUCCEEDED)
    assert not bulk_work_reporting()
    RunResponseFactory()
    assert bulk_work_reporting()


def test_a_batch_lost_with_its_pool_process_is_sent_again_counting_and_fails_its_run_the_third_time(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks import engine_tasks

    sent: list[dict[str, object]] = []
    monkeypatch.setattr(
        engine_tasks.generate_batch, "apply_async", lambda kwargs, queue: sent.append({**kwargs, "queue": queue})
    )
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING)
    run = EstimationRunFactory(job=job, sources=[SourceFactory()])
    assert engine_tasks.resend_lost_batch({"run_id": run.pk, "pairs": [[1, 2]]})
    assert engine_tasks.resend_lost_batch({"run_id": run.pk, "pairs": [[1, 2]], "lost": 1})
    assert sent == [
        {"run_id": run.pk, "pairs": [[1, 2]], "lost": 1, "queue": "gpu"},
        {"run_id": run.pk, "pairs": [[1, 2]], "lost": 2, "queue": "gpu"},
    ]
    assert not engine_tasks.resend_lost_batch({"run_id": run.pk, "pairs": [[1, 2]], "lost": 2})
    assert len(sent) == 2
    run.refresh_from_db()
    job.refresh_from_db()
    assert run.state == EstimationRun.State.FAILED and job.state == Job.State.FAILED
    assert "died 3 times answering the same batch" in job.error
    assert not engine_tasks.resend_lost_batch({"run_id": "x", "pairs": [[1, 2]]})  # not a batch's arguments


def test_a_batch_that_fails_fails_its_run_and_the_run_s_job(db):
    job = JobFactory(kind=Job.Kind.ESTIMATE, state=Job.State.RUNNING)
    run = EstimationRunFactory(job=job, sources=[SourceFactory()])
    assert generate_batch.apply(kwargs={"run_id": run.pk, "pairs": [["not a query id", 1]]}).failed()
    run.refresh_from_db()
    job.refresh_from_db()
    assert run.state == EstimationRun.State.FAILED and run.finished_at is not None
    assert job.state == Job.State.FAILED
    assert job.error == "invalid literal for int() with base 10: 'not a query id'"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        # Recorded from Qwen2.5-Coder-0.5B on demo passages: mostly the bare question.
        ("What was the fourth season of Chicago Fire?", ("What was the fourth season of Chicago Fire?", "")),
        (
            "Question: What was Elvis Presley's most famous song?\nAnswer: \"I Can't Help Falling in Love with You\"",
            ("What was Elvis Presley's most famous song?", "I Can't Help Falling in Love with You"),
        ),
        ("Question: Who?\nAnswer: nobody", ("", "")),  # too short to be a question
        ("The passage is about a band.", ("", "")),  # no question at all
        ("Question: " + "very " * 80 + "long?", ("", "")),  # over MAX_QUESTION_CHARS
        ("Question: Who wrote Hamlet?\nAnswer: I don't know", ("Who wrote Hamlet?", "")),
    ],
)
def test_a_models_question_is_parsed_strictly_with_or_without_its_label(output, expected):
    from core.services.estimation.queries import parse_question

    assert parse_question(output) == expected


def test_a_models_claim_keeps_its_first_sentence_and_a_run_on_or_a_question_is_refused():
    from core.services.estimation.queries import parse_claim

    run_on = (
        "The anticipated TV series, Vampire Diaries, announced its eighth season's release date. "
        "Mark your calendars, as the thrilling saga continues"
    )
    assert (
        parse_claim(run_on) == "The anticipated TV series, Vampire Diaries, announced its eighth season's release date"
    )
    assert parse_claim("Is the sky green?") == ""
    assert parse_claim("word " * 41) == ""
    assert parse_claim("I don't know") == ""


def test_generated_claims_keep_a_leading_name_capitalised(db):
    from core.engine.backends.generation.base import Capability, Generation, GenerationRequest
    from tests.factories import DocumentFactory

    class FakeLlm:
        name = "openai:fake"
        capabilities = frozenset({Capability.FREE_TEXT})

        def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
            return [
                Generation("Who is Keith Bostic?" if i % 2 == 0 else "Keith Bostic played in the NFL", self.name)
                for i, _ in enumerate(requests)
            ]

    made = generate_queries(
        [DocumentFactory(text="Keith Bostic played in the NFL.")], QueryCollectionFactory(), FakeLlm()
    )
    assert [q.question for q in made] == ["Who is Keith Bostic?", "Is it true that Keith Bostic played in the NFL?"]


def test_a_new_run_reuses_the_responses_whose_inputs_are_unchanged_and_says_how_many(worker, embedder):
    """Issue 38 row 10: a second run over the same sources and queries regenerated every
    response. Now a pair whose generator, prompt, k, tau, question and source documents are
    unchanged is copied from the earlier run; a source given a new document answers again."""
    from tests.corpus import store

    good, bad, _ = build_corpus(embedder, reliable=2)
    first = run_to_end(start_estimation_run(sources="all"))
    n_pairs = len(FACTS) * 3
    stored = RunResponse.objects.filter(run=first)
    assert stored.count() == n_pairs and not stored.filter(inputs="").exists()
    assert "reused_responses" not in first.params

    store(good[0], ["The Louvre is a museum in Paris."], embedder)  # this source's documents changed
    second = run_to_end(start_estimation_run(sources="all"))
    assert second.params["reused_responses"] == n_pairs - len(FACTS)
    assert RunResponse.objects.filter(run=second).count() == n_pairs
    assert second.job is not None and any("reused" in line for line in second.job.log)
    before = {(r.query_id, r.source_id): (r.response, r.inputs) for r in stored.exclude(source=good[0])}
    after = {
        (r.query_id, r.source_id): (r.response, r.inputs)
        for r in RunResponse.objects.filter(run=second).exclude(source=good[0])
    }
    assert after == before  # copied as they were
    changed = RunResponse.objects.filter(run=second, source=good[0])
    assert changed.count() == len(FACTS)
    assert not set(changed.values_list("inputs", flat=True)) & set(stored.values_list("inputs", flat=True))
    assert ReliabilityScore.objects.filter(run=second).count() == 3
