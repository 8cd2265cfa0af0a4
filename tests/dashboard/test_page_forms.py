"""Every dashboard page reads its input through a form (core.forms): a value that does not
parse is refused, naming the field, and nothing is stored or shown as if it were another
value (issue 40). Query strings get a 400 page naming the parameter; posted forms come back
with the error on their field."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core.models import AnswerFeedback, EstimationRun, FactQuery, Question
from tests.factories import QuestionFactory, SourceFactory

BAD_QUERIES = [
    ("history", {"page": "abc"}, "page: Enter a page number"),
    ("history", {"from": "yesterday"}, "from: Enter a date as YYYY-MM-DD."),
    ("history", {"from": "2026-05-02", "to": "2026-05-01"}, "to: The end date is before the start date."),
    ("history", {"strategy": "no-such-strategy"}, "strategy: "),
    ("history", {"q": "w" * 201}, "q: "),
    ("claim-list", {"source": "gazette"}, "source: Enter the number of a source."),
    ("claim-list", {"page": "0"}, "page: "),
    ("claim-subject", {"subject": "AA-1", "run": "latest"}, "run: Enter the number of a claims run."),
    ("conflicts", {"edges": "sideways"}, "edges: Choose one of auto, all, strong, conflict, agreement"),
    ("conflicts", {"mode": "votes"}, "mode: Choose one of answers, claims"),
    ("conflicts", {"run": "-3"}, "run: Enter the number of a run."),
    ("run-list", {"page": "2.5"}, "page: Enter a page number"),
    ("run-list", {"query_set": "feedback"}, "query_set: Enter the number of a query set."),
    ("source-list", {"sort": "random"}, "sort: "),
    ("source-list", {"topic": "t-unknown"}, "topic: Choose a topic of the latest run"),
]


@pytest.mark.parametrize(("name", "params", "message"), BAD_QUERIES)
def test_a_page_refuses_a_query_parameter_that_does_not_parse_with_a_400_naming_it(
    analyst_client: Any, db: Any, name: str, params: dict[str, str], message: str
) -> None:
    response = analyst_client.get(reverse(name), params)
    assert response.status_code == 400
    assert message in response.content.decode()


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("source-detail", {"page": "last"}, "page: Enter a page number"),
        ("source-documents", {"page": "-1"}, "page: "),
        ("source-claims", {"page": "two"}, "page: Enter a page number"),
    ],
)
def test_a_source_s_pages_refuse_a_bad_page_number(
    analyst_client: Any, db: Any, name: str, params: dict[str, str], message: str
) -> None:
    response = analyst_client.get(reverse(name, args=[SourceFactory().pk]), params)
    assert response.status_code == 400 and message in response.content.decode()


def test_a_good_query_string_still_shows_the_page(analyst_client: Any, db: Any) -> None:
    for name, params in [
        ("history", {"page": "1", "from": "2026-01-01", "to": "2026-12-31", "strategy": "ra-rag", "q": "x"}),
        ("conflicts", {"edges": "strong", "mode": "answers"}),
        ("conflicts", {"mode": "claims", "page": "3"}),
        ("run-list", {"page": "99", "start": "1"}),  # past the last page: the last page
        ("source-list", {"sort": "name"}),
        ("claim-list", {"q": "AA", "page": "1"}),
    ]:
        assert analyst_client.get(reverse(name), params).status_code == 200, name


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"kappa": "three"}, "kappa must be a whole number."),
        ({"sources_mode": "some"}, "Choose every active source, only those ticked, or all but those ticked."),
        ({"sources_mode": "exclude", "sources": ["gazette"]}, "Not a source: &#x27;gazette&#x27;."),
        ({"source_group": "mine"}, "Choose a group from the list."),
    ],
)
def test_the_ask_form_shows_the_error_on_its_field_and_stores_no_question(
    analyst_client: Any, db: Any, form: dict[str, Any], message: str
) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "Who wrote Dracula?", "strategy": "ra-rag", **form})
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page and "Who wrote Dracula?" in page  # the question typed is kept
    assert not Question.objects.exists()


def test_a_follow_up_with_an_unreadable_earlier_question_is_refused_on_its_field(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "And then?", "follows": "first"})
    assert response.status_code == 400
    assert "follows must be the id of an earlier question (a whole number)." in response.content.decode()
    assert not Question.objects.exists()


def test_feedback_naming_a_source_that_does_not_parse_is_refused_and_nothing_stored(
    analyst_client: Any, db: Any
) -> None:
    question = QuestionFactory(answered=True)
    url = reverse("question-feedback", args=[question.pk])
    response = analyst_client.post(url, {"kind": "source_wrong", "source": "gazette"}, follow=True)
    assert "Your feedback was not saved. source: source must be a source id" in response.content.decode()
    assert not AnswerFeedback.objects.exists()


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"k": "ten"}, "k must be a number."),
        ({"tau": "0.5x"}, "tau must be a number."),
        ({"sources": ["gazette"]}, "Not a source: &#x27;gazette&#x27;."),
        ({"query_set": "feedback"}, "No such query set: choose one of the list."),
    ],
)
def test_the_run_form_shows_the_error_on_its_field_and_starts_no_run(
    curator_client: Any, world: Any, form: dict[str, Any], message: str
) -> None:
    before = EstimationRun.objects.count()
    data = {"query_set": world.query_set.pk, "sources": [s.pk for s in world.sources], **form}
    response = curator_client.post(reverse("run-start"), data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert EstimationRun.objects.count() == before


def test_a_check_naming_no_readable_query_is_refused_on_its_field(curator_client: Any, world: Any) -> None:
    run = world.runs[-1]
    references = list(FactQuery.objects.values_list("pk", "reference_answers"))
    response = curator_client.post(reverse("run-checks", args=[run.pk]), {"query": "first", "answer": "Paris"})
    assert response.status_code == 400
    assert "Choose a query of this run&#x27;s checks." in response.content.decode()
    assert list(FactQuery.objects.values_list("pk", "reference_answers")) == references
