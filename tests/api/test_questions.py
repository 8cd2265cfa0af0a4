"""Questions: asking (validation, 202 with a job, throttling) and reading past answers."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core.models import Question
from tasks.models import Job
from tests.api.helpers import answered_question
from tests.factories import QuestionFactory
from tests.helpers import error_of


def test_asking_without_waiting_answers_202_with_the_job_to_poll(as_analyst, analyst):
    response = as_analyst.post("/api/questions/", {"text": "Where is the Eiffel Tower?", "kappa": 3}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    question = Question.objects.get(pk=body["question"]["id"])
    assert (question.strategy, question.params, question.asked_by) == ("ra-rag", {"kappa": 3}, analyst)
    assert body["job"] == question.job_id
    assert body["question"]["state"] == "pending"
    assert response["Location"].endswith(f"/api/jobs/{question.job_id}/")
    assert body["result_url"].endswith(f"/api/questions/{question.pk}/")


def test_a_question_with_an_unknown_strategy_or_bad_kappa_names_the_fields(as_analyst):
    response = as_analyst.post("/api/questions/", {"text": "Why?", "strategy": "coin-flip", "kappa": 0}, format="json")
    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"strategy", "kappa"}
    assert not Question.objects.exists()


def test_an_empty_question_is_refused_by_the_service_naming_the_text(as_analyst):
    response = as_analyst.post("/api/questions/", {"text": "   "}, format="json")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["text"]
    assert not Job.objects.exists()


def test_wait_must_be_between_0_and_30_seconds(as_analyst):
    response = as_analyst.post("/api/questions/", {"text": "Why?", "wait": 31}, format="json")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["wait"]


def test_an_unknown_field_in_a_question_is_rejected(as_analyst):
    response = as_analyst.post("/api/questions/", {"text": "Why?", "kapa": 2}, format="json")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"kapa": ["Unknown field."]}
    assert not Question.objects.exists()


def test_a_user_without_a_role_cannot_ask(as_nobody):
    assert as_nobody.post("/api/questions/", {"text": "Why?"}, format="json").status_code == 403


def test_a_past_question_is_retrieved_with_every_vote(as_analyst):
    question = answered_question()
    body = as_analyst.get(f"/api/questions/{question.pk}/").json()
    assert (body["answer"], body["confidence"], body["backend"], body["state"]) == (
        "Paris",
        0.75,
        "extractive",
        "succeeded",
    )
    assert body["clusters"][0]["label"] == "Paris"
    first, second = body["votes"]
    assert (first["source_name"], first["response"], first["cluster"], first["weight"]) == ("wiki", "Paris", 0, 1.5)
    assert first["passages"][0]["text"] == "The tower is in Paris."
    assert (second["filtered"], second["cluster"], second["align_score"]) == (True, None, 0.02)


def test_past_questions_are_filtered_by_strategy_and_date(as_analyst):
    old = answered_question("Old?", strategy="mv")
    Question.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=30))
    QuestionFactory(text="New?", strategy="ra-rag")
    texts = lambda params: [q["text"] for q in as_analyst.get("/api/questions/", params).json()["results"]]  # noqa: E731
    assert texts({"strategy": "mv"}) == ["Old?"]
    since = (timezone.now() - dt.timedelta(days=1)).date().isoformat()
    assert texts({"asked_after": since}) == ["New?"]
    assert texts({"asked_before": since}) == ["Old?"]


def test_asking_is_throttled_per_user_by_its_own_scope(as_analyst, as_curator, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "1000/minute", "anon": "60/minute", "ask": "2/minute"},
    }
    for _ in range(2):
        assert as_analyst.post("/api/questions/", {"text": "Why?"}, format="json").status_code == 202
    response = as_analyst.post("/api/questions/", {"text": "Why?"}, format="json")
    assert response.status_code == 429
    assert error_of(response)["code"] == "throttled"
    assert int(response["Retry-After"]) > 0
    assert as_analyst.get("/api/questions/").status_code == 200  # reading is another scope
    assert as_curator.post("/api/questions/", {"text": "Why?"}, format="json").status_code == 202  # another user


def test_every_request_is_throttled_per_user(as_analyst, as_curator, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute", "anon": "60/minute", "ask": "30/minute"},
    }
    for _ in range(3):
        assert as_analyst.get("/api/sources/").status_code == 200
    assert as_analyst.get("/api/sources/").status_code == 429
    assert as_curator.get("/api/sources/").status_code == 200


def test_waiting_on_an_answer_takes_a_slot_and_past_the_slots_the_answer_is_202_at_once(
    as_analyst, settings, monkeypatch
):
    """Issue 38 row 7: clients that wait must never hold every thread of the web server."""
    from core.api.views import engine

    settings.ASK_WAIT_SLOTS = 1
    waited: list[int] = []
    monkeypatch.setattr(engine, "wait_for_job", lambda job_id, timeout=None: waited.append(job_id))
    response = as_analyst.post("/api/questions/", {"text": "Where is the Eiffel Tower?", "wait": 5}, format="json")
    assert response.status_code == 202 and waited == [response.json()["job"]]  # a free slot: it waited

    with engine.wait_slot() as first:  # another request is waiting in the only slot
        assert first is True
        with engine.wait_slot() as second:
            assert second is False
        response = as_analyst.post("/api/questions/", {"text": "Who wrote Dracula?", "wait": 5}, format="json")
        assert response.status_code == 202 and len(waited) == 1  # no slot: 202 at once, no wait
    with engine.wait_slot() as again:
        assert again is True  # released

    settings.ASK_WAIT_SLOTS = 0
    as_analyst.post("/api/questions/", {"text": "Where is Paris?", "wait": 5}, format="json")
    assert len(waited) == 1
