"""Strategies as the API shows them: what each needs, whether it can run here, its own
parameters validated at the edge, and the typed result parts of an answer."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from core.models import Question
from tasks.models import Job
from tests.factories import QuestionFactory
from tests.helpers import error_of


def test_the_strategy_list_says_what_the_offline_reader_cannot_run_and_why(as_analyst):
    response = as_analyst.get("/api/strategies/")
    assert response.status_code == 200
    by_name = {s["name"]: s for s in response.json()}
    assert by_name["ra-rag"]["runnable"] and by_name["ra-rag"]["unavailable_because"] == []
    assert {p["name"] for p in by_name["ra-rag"]["params"]} == {
        "kappa",
        "k",
        "tau",
        "strict_clustering",
        "min_relevance",
    }
    assert by_name["vanilla-llm"]["runnable"] is False
    assert by_name["vanilla-llm"]["requires"] == ["free-text"]
    assert "free text" in by_name["vanilla-llm"]["unavailable_because"][0]
    assert by_name["wmv-oracle"]["runnable"] is False  # only the benchmark knows true reliabilities
    assert [p["name"] for p in by_name["vanilla-rag"]["params"]] == ["pooled_k"]


def test_the_strategy_list_shows_the_configured_defaults(as_analyst, settings):
    settings.RA_RAG_KAPPA = 6
    kappa = next(
        p
        for s in as_analyst.get("/api/strategies/").json()
        if s["name"] == "ra-rag"
        for p in s["params"]
        if p["name"] == "kappa"
    )
    assert kappa["default"] == 6 and kappa["low"] == 1 and kappa["high"] == 50 and kappa["help"]


def test_asking_a_strategy_the_backends_cannot_run_is_refused_naming_the_strategy(as_analyst):
    response = as_analyst.post(
        "/api/questions/", {"text": "Who wrote Hamlet?", "strategy": "vanilla-llm"}, format="json"
    )
    assert response.status_code == 400
    error = error_of(response)
    assert list(error["fields"]) == ["strategy"]
    assert "free text" in error["fields"]["strategy"][0]
    assert not Question.objects.exists() and not Job.objects.exists()


def test_strategy_parameters_are_validated_against_the_strategys_own_params(as_analyst):
    response = as_analyst.post(
        "/api/questions/",
        {"text": "Why?", "strategy": "vanilla-rag", "params": {"pooled_k": 0, "kappa": 3}},
        format="json",
    )
    assert response.status_code == 400
    fields = error_of(response)["fields"]
    assert set(fields) == {"pooled_k", "params"}
    assert "kappa" in fields["params"][0]
    assert not Question.objects.exists()


def test_valid_strategy_parameters_are_stored_with_the_question(as_analyst):
    response = as_analyst.post(
        "/api/questions/",
        {"text": "Why?", "strategy": "ra-rag", "params": {"k": 5, "strict_clustering": True}, "kappa": 2},
        format="json",
    )
    assert response.status_code == 202, response.content
    question = Question.objects.get()
    assert question.params == {"k": 5, "strict_clustering": True, "kappa": 2}


def test_the_kappa_shortcut_is_ignored_by_strategies_without_kappa(as_analyst):
    response = as_analyst.post(
        "/api/questions/", {"text": "Why?", "strategy": "vanilla-rag", "kappa": 3}, format="json"
    )
    assert response.status_code == 202, response.content
    assert Question.objects.get().params == {}


def test_an_answer_shows_its_evidence_chunk_ids_graph_and_trace(as_analyst):
    evidence = [
        {"chunk_id": 7, "source_id": 1, "document_id": 3, "distance": 0.1, "used": True, "credibility": None},
        {"chunk_id": 9, "source_id": 2, "document_id": None, "distance": 0.4, "used": False, "credibility": 0.2},
        {"chunk_id": 7, "source_id": 1, "document_id": 3, "distance": 0.1, "used": True, "credibility": None},
    ]
    graph = {
        "nodes": [
            {"id": "c1", "kind": "claim", "label": "Paris", "source_id": 1, "confidence": 0.9},
            {"id": "c2", "kind": "claim", "label": "Lyon", "source_id": 2, "confidence": 0.1},
        ],
        "edges": [{"a": "c1", "b": "c2", "kind": "conflicts", "weight": 1.0}],
        "confidence": 0.8,
    }
    question = QuestionFactory(answered=True, evidence=evidence, graph=graph, trace={"visited": [1, 2]})
    body = as_analyst.get(f"/api/questions/{question.pk}/").json()
    assert body["evidence"] == [{**e, "claim_id": None} for e in evidence]
    assert body["chunk_ids"] == [7, 9]
    assert body["graph"] == graph
    assert body["trace"] == {"visited": [1, 2]}


def test_claim_evidence_names_its_claim_and_is_not_a_chunk_read(as_analyst):
    evidence = [
        {
            "chunk_id": 0,
            "claim_id": 41,
            "source_id": 1,
            "document_id": None,
            "distance": 0.0,
            "used": True,
            "credibility": 0.8,
        },
        {"chunk_id": 5, "source_id": 2, "document_id": 3, "distance": 0.2, "used": False, "credibility": None},
    ]
    question = QuestionFactory(answered=True, evidence=evidence)
    body = as_analyst.get(f"/api/questions/{question.pk}/").json()
    assert [e["claim_id"] for e in body["evidence"]] == [41, None]
    assert body["chunk_ids"] == [5]


@pytest.mark.parametrize(
    ("field", "value", "fault"),
    [
        ("evidence", [{"chunk_id": "7"}], "evidence[0]"),
        (
            "evidence",
            [{"chunk_id": 1, "source_id": 1, "document_id": None, "distance": 0.1, "used": True, "credibility": 1.5}],
            "credibility",
        ),
        (
            "graph",
            {"nodes": [], "edges": [{"a": "x", "b": "y", "kind": "k", "weight": 1}], "confidence": None},
            "not in the graph",
        ),
    ],
)
def test_a_question_refuses_result_parts_that_break_the_schema(db, field, value, fault):
    question = QuestionFactory.build(**{field: value})
    with pytest.raises(ValidationError) as error:
        question.full_clean(validate_unique=False, validate_constraints=False)
    assert fault in str(error.value.message_dict[field])
