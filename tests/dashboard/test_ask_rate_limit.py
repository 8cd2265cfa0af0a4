"""The ask form counts against the same per-user "ask" budget as POST /api/questions/:
past it the page answers 429 with a message saying when to ask again, and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.urls import reverse

from core.models import Question
from tests.factories import QuestionFactory


@pytest.fixture(autouse=True)
def two_asks_a_minute(settings: Any, db: Any, monkeypatch: Any) -> Iterator[None]:
    """An "ask" budget of 2 per minute, counted from nothing, and asks that store their
    question without a worker."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "1000/minute", "anon": "60/minute", "ask": "2/minute"},
    }

    def fake_start(text: str, **kwargs: Any) -> Question:
        return QuestionFactory(text=text, strategy=kwargs["strategy"], asked_by=kwargs["user"])

    monkeypatch.setattr("core.views.ask.start_question", fake_start)
    monkeypatch.setattr("core.api.views.engine.start_question", fake_start)
    cache.clear()
    yield
    cache.clear()


def ask(client: Any, text: str = "Who wrote Dracula?", **headers: str) -> Any:
    return client.post(reverse("ask"), {"text": text, "strategy": "ra-rag"}, headers=headers)


def test_an_ask_past_the_budget_is_refused_with_429_and_stores_nothing(analyst_client: Any) -> None:
    assert [ask(analyst_client).status_code for _ in range(2)] == [302, 302]
    response = ask(analyst_client, "One too many?")
    assert response.status_code == 429
    content = response.content.decode()
    assert "You have asked too many questions in a short time (at most 2 per minute" in content
    assert "Ask again in" in content
    assert 0 < int(response["Retry-After"]) <= 60
    assert "One too many?" in content  # the text is kept in the form to send again
    assert Question.objects.count() == 2


def test_an_htmx_ask_past_the_budget_gets_the_message_in_the_result_panel(analyst_client: Any) -> None:
    for _ in range(2):
        ask(analyst_client, HX_Request="true")
    response = ask(analyst_client, HX_Request="true")
    assert response.status_code == 429
    assert b"The question was not sent" in response.content and b"too many questions" in response.content
    assert Question.objects.count() == 2


def test_asks_through_the_api_and_the_page_share_one_budget(analyst_client: Any, as_analyst: Any) -> None:
    api = as_analyst
    assert api.post("/api/questions/", {"text": "Why?", "wait": 0}, format="json").status_code == 200
    assert ask(analyst_client).status_code == 302
    assert ask(analyst_client).status_code == 429
    assert api.post("/api/questions/", {"text": "Why?", "wait": 0}, format="json").status_code == 429
    assert Question.objects.count() == 2


def test_the_budget_is_per_user(analyst_client: Any, curator_client: Any) -> None:
    for _ in range(2):
        ask(analyst_client)
    assert ask(analyst_client).status_code == 429
    assert ask(curator_client).status_code == 302
