"""A page address opened with a method it does not take answers the product's own 405 page
(what the address is for, nothing changed), never a blank response; the API keeps its JSON."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tests.factories import QuestionFactory


def test_opening_a_form_s_address_in_the_browser_gives_a_page_that_says_what_it_is_for(
    analyst_client: Any, db: Any
) -> None:
    question = QuestionFactory(answered=True)
    response = analyst_client.get(reverse("question-feedback", args=[question.pk]))
    assert response.status_code == 405 and response["Allow"] == "POST"
    page = response.content.decode()
    assert 'id="error-405"' in page and "takes a form's submission" in page and "Nothing was changed" in page
    assert '<nav aria-label="Main">' in page  # the product's page, with its navigation


def test_the_api_keeps_its_json_error_for_a_wrong_method(as_curator: Any, db: Any) -> None:
    response = as_curator.get("/api/claim-runs/")  # POST only
    assert response.status_code == 405 and response["Content-Type"].startswith("application/json")
