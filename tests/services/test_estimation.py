"""Estimation runs on the real database through the real worker."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from core.engine.backends.generation.extractive import ExtractiveReader
from core.models import EstimationRun, QuerySet, ReliabilityScore, RunAnswer, RunResponse
from core.services.estimation import (
    QueryGenerationUnavailable,
    generate_queries,
    resume_estimation_run,
    start_estimation_run,
)
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.factories import SourceFactory
from tests.services.corpus import FACTS, build_corpus


def run_to_end(run: EstimationRun) -> EstimationRun:
    job = wait_for_job(run.job_id, timeout=240)
    assert job.state == Job.State.SUCCEEDED, job.error
    run.refresh_from_db()
    return run


def test_a_run_scores_the_misinformation_source_below_the_sources_that_agree_and_is_idempotent(worker, embedder):
    good, bad, query_set = build_corpus(embedder)
    run = run_to_end(start_estimation_run(params={"batch_size": 7}))
    assert run.state == EstimationRun.State.SUCCEEDED and run.query_set == query_set
    n_pairs = len(FACTS) * 4
    assert RunResponse.objects.filter(run=run).count() == n_pairs
    assert run.job.percent == 100 and run.job.progress_total == n_pairs
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
    run = run_to_end(resume_estimation_run(run))
    assert list(RunResponse.objects.filter(run=run).order_by("id").values_list("id", flat=True)) == before
    assert ReliabilityScore.objects.filter(run=run).count() == 4
    assert run.job.result["responses"] == n_pairs


def test_a_run_resumes_where_it_stopped_and_only_generates_missing_pairs(worker, embedder):
    build_corpus(embedder, reliable=2)
    run = run_to_end(start_estimation_run())
    RunResponse.objects.filter(run=run, query__question__startswith="Who").delete()
    kept = set(RunResponse.objects.filter(run=run).values_list("id", flat=True))
    run = run_to_end(resume_estimation_run(run))
    assert RunResponse.objects.filter(run=run).count() == len(FACTS) * 3
    assert kept <= set(RunResponse.objects.filter(run=run).values_list("id", flat=True))


def test_starting_a_run_without_queries_or_with_empty_sources_names_the_fields(db):
    with pytest.raises(ValidationError) as caught:
        start_estimation_run()
    assert set(caught.value.message_dict) == {"query_set", "sources"}
    empty_set = QuerySet.objects.create(name="empty")
    with pytest.raises(ValidationError) as caught:
        start_estimation_run(
            query_set=empty_set, sources=[SourceFactory(name="nothing")], params={"batch_size": 0, "bogus": 1}
        )
    assert set(caught.value.message_dict) == {"query_set", "sources", "batch_size", "params"}
    assert EstimationRun.objects.count() == 0 and Job.objects.count() == 0


def test_generating_queries_offline_says_an_llm_backend_is_needed(db):
    query_set = QuerySet.objects.create(name="generated")
    with pytest.raises(QueryGenerationUnavailable, match="LLM backend"):
        generate_queries([], query_set, ExtractiveReader())


def test_generating_queries_with_an_llm_makes_a_question_and_a_yes_no_claim_check(db):
    from core.engine.backends.generation.base import Generation
    from tests.factories import DocumentFactory

    class FakeLlm:
        name = "openai:fake"

        def generate(self, requests):
            return [
                Generation(
                    "Question: What causes COVID-19?\nAnswer: SARS-CoV-2"
                    if "QUESTION" in r.prompt.upper().split("\n")[0]
                    else "COVID-19 is caused by SARS-CoV-2",
                    self.name,
                )
                for r in requests
            ]

    doc = DocumentFactory(text="COVID-19 is caused by the SARS-CoV-2 virus.")
    query_set = QuerySet.objects.create(name="generated")
    made = generate_queries([doc], query_set, FakeLlm())
    assert [(q.question, q.origin) for q in made] == [
        ("What causes COVID-19?", "generated"),
        ("Is it true that COVID-19 is caused by SARS-CoV-2?", "yes-no"),
    ]
    assert made[0].reference_answers == ["SARS-CoV-2"] and made[0].document == doc
    assert generate_queries([doc], query_set, FakeLlm()) == []  # already held
