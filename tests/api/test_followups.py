"""Follow-up questions through the API: ``follows`` on POST /api/questions/, the standalone
rewrite in the answer, and clear errors for a question that cannot be followed."""

from __future__ import annotations

from core.models import Question
from tasks.models import Job
from tests.api.helpers import answered_question
from tests.factories import QuestionFactory
from tests.helpers import error_of


def test_a_follow_up_returns_the_question_it_follows_and_its_standalone_text(as_analyst):
    earlier = answered_question("In which city is the Eiffel Tower located?")
    response = as_analyst.post(
        "/api/questions/", {"text": "When was it completed?", "follows": earlier.pk}, format="json"
    )
    assert response.status_code == 202, response.content
    body = response.json()["question"]
    assert body["follows"] == earlier.pk
    assert body["text"] == "When was it completed?"
    assert body["standalone"] == "When was the Eiffel Tower completed?"
    question = Question.objects.get(pk=body["id"])
    assert question.follows == earlier and question.standalone == body["standalone"]

    detail = as_analyst.get(f"/api/questions/{question.pk}/").json()
    assert (detail["follows"], detail["standalone"]) == (earlier.pk, "When was the Eiffel Tower completed?")
    earlier_body = as_analyst.get(f"/api/questions/{earlier.pk}/").json()
    assert (earlier_body["follows"], earlier_body["standalone"]) == (None, "")


def test_following_an_unknown_question_is_a_400_naming_follows(as_analyst):
    response = as_analyst.post("/api/questions/", {"text": "When was he born?", "follows": 424242}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert list(error["fields"]) == ["follows"]
    assert "no question #424242" in error["fields"]["follows"][0]
    assert not Question.objects.exists() and not Job.objects.exists()


def test_follows_must_be_a_positive_whole_number(as_analyst):
    for bad in ("abc", 0, -3, 1.5, True, [1]):
        response = as_analyst.post("/api/questions/", {"text": "When was he born?", "follows": bad}, format="json")
        assert response.status_code == 400, bad
        assert list(error_of(response)["fields"]) == ["follows"], bad
    assert not Question.objects.exists()


def test_following_a_question_still_being_answered_is_a_400(as_analyst):
    pending = QuestionFactory(text="Who wrote Dracula?")
    response = as_analyst.post("/api/questions/", {"text": "When was he born?", "follows": pending.pk}, format="json")
    assert response.status_code == 400
    assert "has no answer yet" in error_of(response)["fields"]["follows"][0]
    assert Question.objects.count() == 1
