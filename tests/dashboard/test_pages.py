"""Every dashboard page renders for an analyst within a bounded number of SQL queries."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import QuestionFactory, SourceFactory, VoteFactory


def _pages(world: Any) -> list[str]:
    return [
        reverse("ask"),
        reverse("history"),
        reverse("question-detail", args=[world.question.pk]),
        reverse("question-panel", args=[world.question.pk]),
        reverse("source-list"),
        reverse("source-detail", args=[world.sources[2].pk]),
        reverse("run-list"),
        reverse("run-detail", args=[world.runs[1].pk]),
        reverse("run-result", args=[world.runs[1].pk]),
        reverse("conflicts"),
    ]


def test_every_page_renders_for_an_analyst(analyst_client: Any, world: Any) -> None:
    for url in _pages(world):
        response = analyst_client.get(url)
        assert response.status_code in (200, 286), url


def test_anonymous_visitors_are_sent_to_the_login_page(client: Any, world: Any) -> None:
    for url in _pages(world):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_a_user_without_a_role_is_refused(nobody_client: Any, world: Any) -> None:
    assert nobody_client.get(reverse("source-list")).status_code == 403


@pytest.mark.parametrize("name", ["source-list", "conflicts", "history", "run-list"])
def test_list_pages_do_not_grow_queries_with_more_sources(
    analyst_client: Any, world: Any, name: str, django_assert_max_num_queries: Any
) -> None:
    for i in range(30):
        SourceFactory(name=f"extra-{i}")
    with django_assert_max_num_queries(12):
        assert analyst_client.get(reverse(name)).status_code == 200


def test_question_page_queries_do_not_grow_with_votes(
    analyst_client: Any, world: Any, django_assert_max_num_queries: Any
) -> None:
    question = world.question
    for i in range(25):
        VoteFactory(
            question=question, source=SourceFactory(name=f"voter-{i}"), rank=10 + i, response="paris", weight=0.5
        )
    with django_assert_max_num_queries(10):
        response = analyst_client.get(reverse("question-detail", args=[question.pk]))
    assert response.status_code == 200
    assert response.content.count(b'class="vote') == 29


def test_run_and_source_pages_have_bounded_queries(
    analyst_client: Any, world: Any, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(14):
        assert analyst_client.get(reverse("run-detail", args=[world.runs[1].pk])).status_code == 200
    with django_assert_max_num_queries(12):
        assert analyst_client.get(reverse("source-detail", args=[world.sources[0].pk])).status_code == 200


def test_history_filters_by_strategy_and_date(analyst_client: Any, world: Any) -> None:
    QuestionFactory(text="Other strategy?", strategy="vanilla-rag")
    page = analyst_client.get(reverse("history"), {"strategy": "ra-rag"}).content.decode()
    assert "What is the capital?" in page and "Other strategy?" not in page
    page = analyst_client.get(reverse("history"), {"from": "2999-01-01"}).content.decode()
    assert "What is the capital?" not in page


def test_the_navigation_links_the_api_documentation(analyst_client: Any, db: Any) -> None:
    page = analyst_client.get(reverse("ask")).content.decode()
    nav = page[page.index('<nav aria-label="Main">') : page.index("</nav>")]
    assert f'<a href="{reverse("api:docs")}">API</a>' in nav
    assert analyst_client.get(reverse("api:docs")).status_code == 200
