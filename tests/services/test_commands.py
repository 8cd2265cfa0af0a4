"""The ask and estimate commands' output."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.models import Question
from tests.corpus import build_corpus


def test_ask_json_prints_one_object_with_the_answer_and_every_vote(db, embedder):
    build_corpus(embedder, reliable=2)
    out = StringIO()
    call_command("ask", "Who wrote Hamlet?", "--strategy", "ra-rag-all", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["answer"] == "William Shakespeare"
    assert data["strategy"] == "ra-rag-all" and data["backend"] == "extractive"
    assert 0 < data["confidence"] <= 1
    assert len(data["votes"]) == 3
    assert set(data["votes"][0]) >= {"source", "response", "filtered", "align_score", "cluster", "weight"}
    assert {v["response"] for v in data["votes"]} == {"William Shakespeare", "Christopher Marlowe"}


def test_ask_refuses_a_bad_kappa_with_the_field_name(db):
    with pytest.raises(CommandError, match="kappa"):
        call_command("ask", "Who wrote Hamlet?", "--kappa", "0")
    assert Question.objects.count() == 0


def test_estimate_json_prints_per_source_scores_after_the_run(worker, embedder):
    build_corpus(embedder, reliable=2)
    out = StringIO()
    call_command(
        "estimate",
        "--queries",
        "demo",
        "--sources",
        "reliable-0",
        "reliable-1",
        "misinformer",
        "--json",
        "--timeout",
        "240",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert data["state"] == "succeeded"
    scores = {s["source"]: s for s in data["scores"]}
    assert set(scores) == {"reliable-0", "reliable-1", "misinformer"}
    assert set(scores["misinformer"]) >= {"reliability", "weight", "low", "high", "answers", "agreements"}


def test_estimate_names_an_unknown_source(db):
    with pytest.raises(CommandError, match="Unknown source"):
        call_command("estimate", "--sources", "nowhere")


def test_estimate_gold_n_uses_the_reference_answers_of_only_n_queries_spread_over_the_set(db, embedder):
    from core.models import EstimationRun, FactQuery

    _, _, query_set = build_corpus(embedder, reliable=2)
    checked = list(FactQuery.objects.filter(query_set=query_set).exclude(reference_answers=[]).order_by("pk"))
    assert len(checked) == 6
    call_command("estimate", "--queries", "demo", "--gold", "3", stdout=StringIO())
    run = EstimationRun.objects.get()
    assert run.params["gold_query_ids"] == [checked[0].pk, checked[2].pk, checked[4].pk]
    call_command("estimate", "--queries", "demo", "--gold", "0", stdout=StringIO())
    assert EstimationRun.objects.latest("pk").params["gold_query_ids"] == []
    with pytest.raises(CommandError, match="gold"):
        call_command("estimate", "--queries", "demo", "--gold", "-1")


def test_estimate_claims_refuses_query_set_options_and_says_when_there_are_no_claims(db):
    with pytest.raises(CommandError, match="--gold does not go with --claims"):
        call_command("estimate", "--claims", "--gold", "3")
    with pytest.raises(CommandError, match="There are no claims to estimate"):
        call_command("estimate", "--claims")
