"""Asking: validation, synchronous answering with votes, and the queued path through the worker."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from core.engine.types import Embedder
from core.models import Question, Vote
from core.services.asking import ask_now, start_question
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.corpus import build_corpus


def test_an_empty_question_is_refused_naming_the_text_field(db):
    with pytest.raises(ValidationError) as caught:
        start_question("   ")
    assert "text" in caught.value.message_dict
    assert Question.objects.count() == 0 and Job.objects.count() == 0


def test_an_overlong_question_an_unknown_strategy_and_a_bad_kappa_are_each_named(db):
    with pytest.raises(ValidationError) as caught:
        start_question("x" * 2001, strategy="oracle-magic", kappa=0)
    assert set(caught.value.message_dict) == {"text", "strategy", "kappa"}
    with pytest.raises(ValidationError) as caught:
        start_question("Who?", kappa=51)
    assert set(caught.value.message_dict) == {"kappa"}


def test_asking_persists_the_answer_and_one_vote_per_consulted_source_with_the_backend(
    db: None, embedder: Embedder
) -> None:
    good, bad, _ = build_corpus(embedder)
    question = ask_now("What is the capital of France?", strategy="ra-rag-all")
    question.refresh_from_db()
    assert question.answer == "Paris"
    assert question.backend == "extractive"
    assert question.answered_at is not None
    assert question.confidence is not None and 0 < question.confidence <= 1
    assert question.calls == 4
    votes = list(Vote.objects.filter(question=question).select_related("source"))
    assert {v.source.name for v in votes} == {"reliable-0", "reliable-1", "reliable-2", "misinformer"}
    assert [v.rank for v in votes] == [0, 1, 2, 3]
    misinformer = next(v for v in votes if v.source == bad)
    assert misinformer.response == "Lyon"
    assert misinformer.cluster != next(v for v in votes if v.source == good[0]).cluster
    passage = votes[0].passages[0]
    assert set(passage) == {"chunk_id", "document_id", "title", "url", "text", "distance"}
    assert {c["label"] for c in question.clusters} == {"Paris", "Lyon"}


def test_ra_rag_stops_after_kappa_sources_that_answer(db, embedder):
    build_corpus(embedder)
    question = ask_now("Who wrote Hamlet?", strategy="ra-rag", kappa=2)
    assert question.params["kappa"] == 2
    assert question.votes.exclude(response="I don't know").count() == 2
    assert question.calls <= 4


def test_a_started_question_is_answered_by_the_worker_and_linked_to_its_job(worker, embedder):
    build_corpus(embedder, reliable=2)
    question = start_question("Who painted the Mona Lisa?", strategy="mv")
    assert question.job is not None and question.job.kind == Job.Kind.ASK
    job = wait_for_job(question.job.pk, timeout=120)
    assert job.state == Job.State.SUCCEEDED, job.error
    question.refresh_from_db()
    assert question.answer == "Leonardo da Vinci"
    assert question.votes.count() == 3
    assert job.result["backend"] == "extractive"


def test_an_ask_never_encodes_a_retrieved_passage_again_it_reuses_the_stored_vector(
    db: None, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passages read for the first time cost no model call: the retriever hands the NLI the
    vectors stored at ingestion, in the same SQL statement, and the scores are the same."""
    from core.engine.backends.nli import EmbeddingLexicalNLI
    from runtime.backends import configured_embedder, configured_nli
    from sources.models import Chunk

    build_corpus(embedder)
    nli, model = configured_nli(), configured_embedder()
    assert isinstance(nli, EmbeddingLexicalNLI)  # the configured NLI (NLI_BACKEND) caches passage vectors
    assert nli.embedder is model
    nli._cache.clear()  # as on a worker that has not read these passages yet
    encoded: list[str] = []
    calls: list[int] = []
    original = model.encode

    def spy(texts, *args, **kwargs):
        encoded.extend(texts)
        calls.append(len(texts))
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(model, "encode", spy)

    question = ask_now("What is the capital of France?", strategy="ra-rag-all")

    assert question.answer == "Paris"
    read = {p["text"] for vote in question.votes.all() for p in vote.passages}
    assert read and not read & set(encoded), "a retrieved passage was encoded again"
    assert "What is the capital of France?" in encoded  # the question itself is, once
    # and the answers' texts (filter and clustering) in one batch: two model calls in all
    assert len(calls) == 2, calls
    stored = dict(Chunk.objects.filter(text__in=read).values_list("text", "embedding"))
    for text in read:
        assert np.allclose(nli._cache[text], stored[text], atol=1e-6)


def test_ra_rag_searches_only_the_sources_it_reaches_and_they_read_what_a_full_search_gives(db, embedder):
    """κ-RRSS visits sources by reliability; only those it reaches are searched (in rounds),
    and each of them reads the passages one search over every source would give it."""
    from core.engine.steps.relevance import on_topic
    from runtime.backends import configured_embedder
    from sources.models import Source
    from sources.retrieval import PgRetriever
    from tests.corpus import store
    from tests.factories import SourceFactory

    question_text = "What is the capital of France?"
    offtopic = "The Chicago Fire fourth season has twenty three episodes."
    first = [SourceFactory(name=f"off-topic-{i}", reliability=0.9, reliability_answers=30) for i in range(5)]
    good, bad, _ = build_corpus(embedder, reliable=1)
    Source.objects.filter(pk=good[0].pk).update(reliability=0.8, reliability_answers=30)
    Source.objects.filter(pk=bad.pk).update(reliability=0.3, reliability_answers=30)
    last = [SourceFactory(name=f"unreached-{i}", reliability=0.1, reliability_answers=30) for i in range(6)]
    for source in first + last:
        store(source, [offtopic], embedder)

    question = ask_now(question_text, strategy="ra-rag", kappa=2)

    visited = question.trace["visited"]
    assert visited == [s.pk for s in first] + [good[0].pk, bad.pk]
    searched = question.trace["searched"]
    # Rounds of 4 (twice the first batch of 2), then 4 more: 8 of the 13 sources.
    assert searched == visited + [last[0].pk]
    assert not {s.pk for s in last[1:]} & set(searched)
    every = [s.pk for s in first + good + [bad] + last]
    full = PgRetriever().top_k_per_source(configured_embedder().encode([question_text])[0], every, 3)
    votes = list(question.votes.all())
    assert {v.source_id for v in votes} == set(visited)
    for vote in votes:
        # What a full search gives it, less the passages about another subject (steps.relevance):
        # the off-topic sources read nothing and were not asked.
        about = on_topic(question_text, full[vote.source_id])
        assert [p["chunk_id"] for p in vote.passages] == [p.chunk_id for p in about]
        assert (vote.backend == "") == (not about)
    assert [v.passages for v in votes if v.source_id in {s.pk for s in first}] == [[]] * len(first)
    assert question.answer == "Paris"
