"""Gold-checked queries, copy detection, incremental updates and low-evidence answers in the API:
query sets and reference answers (curators write), both accuracies per source, the pairwise
dependence of a run, the detected pairs among the conflicts, POST .../update/, low_evidence."""

from __future__ import annotations

import pytest

from core.models import EstimationRun, FactQuery, QueryCollection
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    QueryCollectionFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    RunResponseFactory,
    SourceDependenceFactory,
    SourceFactory,
)
from tests.helpers import error_of

# --- Query sets and reference answers -----------------------------------------------------


def test_a_curator_creates_a_query_set_with_reference_answers_and_analysts_read_it(as_curator, as_analyst):
    body = {
        "name": "capitals",
        "description": "Capital cities",
        "queries": [
            {"question": "Capital of France?", "reference_answers": ["Paris"], "tags": ["geo"]},
            {"question": "Capital of Peru?"},
        ],
    }
    response = as_curator.post("/api/query-sets/", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["name"], created["query_count"], created["gold_count"]) == ("capitals", 2, 1)
    assert "queries" not in created
    query_set = QueryCollection.objects.get(name="capitals")
    assert list(query_set.queries.order_by("id").values_list("question", "reference_answers")) == [
        ("Capital of France?", ["Paris"]),
        ("Capital of Peru?", []),
    ]
    listed = as_analyst.get("/api/query-sets/").json()["results"]
    assert [(s["name"], s["query_count"], s["gold_count"]) for s in listed] == [("capitals", 2, 1)]
    gold = as_analyst.get(f"/api/fact-queries/?query_set={query_set.pk}&gold=true").json()["results"]
    assert [(q["question"], q["reference_answers"]) for q in gold] == [("Capital of France?", ["Paris"])]
    assert as_analyst.post("/api/query-sets/", {"name": "mine"}, format="json").status_code == 403


def test_a_query_set_repeating_a_question_or_an_existing_name_is_refused_and_nothing_is_stored(as_curator):
    QueryCollectionFactory(name="taken")
    twice = {"name": "twice", "queries": [{"question": "Same?"}, {"question": "Same?"}]}
    response = as_curator.post("/api/query-sets/", twice, format="json")
    assert response.status_code == 400 and "repeats" in error_of(response)["fields"]["queries"][0]
    response = as_curator.post("/api/query-sets/", {"name": "taken"}, format="json")
    assert response.status_code == 400 and "name" in error_of(response)["fields"]
    assert list(QueryCollection.objects.values_list("name", flat=True)) == ["taken"]


def test_a_curator_sets_a_query_s_reference_answers_but_not_its_question(as_curator, as_analyst):
    query = FactQueryFactory(question="Who wrote Hamlet?")
    url = f"/api/fact-queries/{query.pk}/"
    response = as_curator.patch(url, {"reference_answers": ["William Shakespeare", "Shakespeare"]}, format="json")
    assert response.status_code == 200, response.content
    query.refresh_from_db()
    assert query.reference_answers == ["William Shakespeare", "Shakespeare"]
    assert as_analyst.get(url).json()["reference_answers"] == ["William Shakespeare", "Shakespeare"]
    refused = as_curator.patch(url, {"question": "Who wrote Macbeth?"}, format="json")
    assert refused.status_code == 400 and error_of(refused)["fields"]["question"] == ["This field is read-only."]
    assert as_curator.put(url, {"reference_answers": []}, format="json").status_code == 405
    assert as_analyst.patch(url, {"reference_answers": []}, format="json").status_code == 403
    assert FactQuery.objects.get(pk=query.pk).question == "Who wrote Hamlet?"


# --- Both accuracies, and the history of both kinds of run --------------------------------


def test_run_scores_and_a_source_s_history_carry_both_the_estimated_accuracy_and_the_accuracy_on_gold(as_analyst):
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    run = EstimationRunFactory(succeeded=True, sources=[wiki, blog], gold_queries=[1, 2, 3, 4])
    ReliabilityScoreFactory(run=run, source=wiki, reliability=0.8, gold_answers=4, gold_agreements=3)
    ReliabilityScoreFactory(run=run, source=blog, reliability=0.3, gold_answers=0, gold_agreements=0)
    update = EstimationRunFactory(succeeded=True, sources=[wiki], kind="update", parent=run)
    ReliabilityScoreFactory(run=update, source=wiki, reliability=0.85, gold_answers=5, gold_agreements=4)

    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert (body["kind"], body["parent"], body["gold_queries"]) == ("full", None, [1, 2, 3, 4])
    scores = {s["source_name"]: s for s in body["scores"]}
    assert (scores["wiki"]["reliability"], scores["wiki"]["gold_accuracy"]) == (0.8, 0.75)
    assert (scores["wiki"]["gold_answers"], scores["wiki"]["gold_agreements"]) == (4, 3)
    assert scores["blog"]["gold_accuracy"] is None
    history = as_analyst.get(f"/api/sources/{wiki.pk}/reliability/").json()["history"]
    assert [(h["run_id"], h["kind"], h["parent_run_id"], h["reliability"], h["gold_accuracy"]) for h in history] == [
        (run.pk, "full", None, 0.8, 0.75),
        (update.pk, "update", run.pk, 0.85, 0.8),
    ]


def test_a_curator_adds_new_gold_to_a_finished_run_through_the_api(as_curator, as_analyst, curator):
    honest, liar = SourceFactory(name="honest"), SourceFactory(name="liar")
    run = EstimationRunFactory(succeeded=True, sources=[honest, liar], params={"estimator": "iwmv"})
    query = FactQueryFactory(query_set=run.query_set, question="Capital of France?", reference_answers=["Paris"])
    RunResponseFactory(run=run, query=query, source=honest, response="Paris", cluster=0, agrees=False)
    RunResponseFactory(run=run, query=query, source=liar, response="Lyon", cluster=1, agrees=True)
    for source, value in ((honest, 0.5), (liar, 0.5)):
        ReliabilityScoreFactory(run=run, source=source, reliability=value, answers=1, agreements=int(source == liar))

    assert as_analyst.post(f"/api/estimation-runs/{run.pk}/update/", {}, format="json").status_code == 403
    response = as_curator.post(f"/api/estimation-runs/{run.pk}/update/", {"queries": [query.pk]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    update = EstimationRun.objects.get(pk=body["id"])
    assert (body["kind"], body["parent"], update.created_by) == ("update", run.pk, curator)
    scores = {s["source_name"]: s for s in body["scores"]}
    # (0.5 * 3 - agreed + 3 * right) / (3 + 2 * 1): answers + alpha + beta = 3, one new gold answer
    assert scores["honest"]["reliability"] == pytest.approx((1.5 - 0 + 3) / 5)
    assert scores["liar"]["reliability"] == pytest.approx((1.5 - 1 + 0) / 5)
    assert (scores["honest"]["gold_accuracy"], scores["liar"]["gold_accuracy"]) == (1.0, 0.0)

    again = as_curator.post(f"/api/estimation-runs/{run.pk}/update/", {"queries": [query.pk]}, format="json")
    assert again.status_code == 201  # the parent never used it; the update run did
    nothing = as_curator.post(f"/api/estimation-runs/{update.pk}/update/", {}, format="json")
    assert nothing.status_code == 400 and "queries" in error_of(nothing)["fields"]
    pending = EstimationRunFactory(query_set=run.query_set)
    refused = as_curator.post(f"/api/estimation-runs/{pending.pk}/update/", {}, format="json")
    assert refused.status_code == 409 and error_of(refused)["code"] == "conflict"


# --- Copying and collusion --------------------------------------------------------------


def copying_run():
    a, b, c, d = (SourceFactory(name=n) for n in ("farm", "trending", "wire", "forum"))
    run = EstimationRunFactory(succeeded=True, sources=[a, b, c, d], params={"estimator": "accucopy"})
    evidence = [{"query_id": 7, "query": "Capital of France?", "answer": "Lyon"}]
    SourceDependenceFactory(run=run, source_a=a, source_b=b, probability=0.97, examples=evidence)
    SourceDependenceFactory(run=run, source_a=c, source_b=d, probability=0.12, same_false=0.0, same_true=8.0)
    return run, evidence


def test_a_run_s_dependence_lists_every_examined_pair_most_likely_first_with_its_evidence(as_analyst):
    run, evidence = copying_run()
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/dependence/").json()
    assert (body["run_id"], body["copy_detection"], body["threshold"]) == (run.pk, True, 0.5)
    assert [(p["source_a_name"], p["source_b_name"], p["probability"]) for p in body["pairs"]] == [
        ("farm", "trending", 0.97),
        ("wire", "forum", 0.12),
    ]
    assert body["pairs"][0]["examples"] == evidence and body["pairs"][0]["same_false"] == 6.0
    assert body["unsettled"] is False
    # A run agreement does not identify: its pairs may be the honest group a larger group outvotes.
    EstimationRun.objects.filter(pk=run.pk).update(identification={"identified": False, "reason": "groups"})
    assert as_analyst.get(f"/api/estimation-runs/{run.pk}/dependence/").json()["unsettled"] is True
    assert as_analyst.get(f"/api/conflicts/?run={run.pk}").json()["unsettled"] is True
    plain = EstimationRunFactory(succeeded=True)
    assert as_analyst.get(f"/api/estimation-runs/{plain.pk}/dependence/").json()["copy_detection"] is False


def test_the_conflicts_include_only_the_pairs_detected_as_dependent(as_analyst):
    run, evidence = copying_run()
    body = as_analyst.get(f"/api/conflicts/?run={run.pk}").json()
    assert body["copy_detection"] is True
    assert [(p["source_a_name"], p["source_b_name"], p["examples"]) for p in body["dependent_pairs"]] == [
        ("farm", "trending", evidence)
    ]
    assert as_analyst.get("/api/conflicts/").json()["dependent_pairs"] == body["dependent_pairs"]  # latest full run


# --- Low evidence -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "notes", "low"),
    [
        (0.9, [], False),
        (0.3, [], True),
        (0.9, ["This answer rests on 1 source whose reliability has never been checked."], True),
    ],
)
def test_a_question_says_when_its_answer_rests_on_little_evidence(as_analyst, confidence, notes, low):
    question = QuestionFactory(answered=True, confidence=confidence, notes=notes)
    assert as_analyst.get(f"/api/questions/{question.pk}/").json()["low_evidence"] is low
    assert as_analyst.get("/api/questions/").json()["results"][0]["low_evidence"] is low


def test_an_unanswered_question_or_no_answer_is_not_flagged(as_analyst):
    pending = QuestionFactory()
    idk = QuestionFactory(answered=True, answer="I don't know", confidence=0.0)
    for question in (pending, idk):
        assert as_analyst.get(f"/api/questions/{question.pk}/").json()["low_evidence"] is False
