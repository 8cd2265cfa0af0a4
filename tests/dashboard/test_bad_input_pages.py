"""Bad input on the dashboard that once gave a 500 (issue 25): a page answers with a message
instead, and the source stays usable."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core.models import Question
from tests.factories import DocumentFactory, SourceFactory


def test_a_source_holding_a_1_3_mb_document_stays_searchable(analyst_client: Any, db: Any) -> None:
    # 130,000 distinct words: their lexemes alone pass to_tsvector's 1 MB limit.
    huge = "Lighthouse keepers. " + " ".join(f"zq{i:07d}" for i in range(130_000))
    assert len(huge) > 1_300_000
    source = SourceFactory()
    DocumentFactory(source=source, title="Logbook", text=huge)
    DocumentFactory(source=source, title="Rivers", text="The Danube flows through Vienna.")
    url = reverse("source-documents", args=[source.pk])
    found = analyst_client.get(url, {"q": "lighthouse"})
    assert found.status_code == 200
    assert "Logbook" in found.content.decode() and "Rivers" not in found.content.decode()
    other = analyst_client.get(url, {"q": "vienna"})
    assert other.status_code == 200
    assert "Rivers" in other.content.decode() and "Logbook" not in other.content.decode()


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("claim-list", {"q": "fl\x00ight"}),
        ("claim-list", {"attribute": "\x00"}),
        ("claim-subject", {"subject": "AA\x00-1", "attribute": "gate"}),
        ("claim-conflict", {"subject": "AA-1", "attribute": "ga\x00te"}),
        ("history", {"q": "paris\x00"}),
        ("conflicts", {"q": "\x00"}),
        ("source-documents", {"q": "vienna\x00"}),
    ],
)
def test_a_nul_byte_in_a_page_s_query_string_is_a_400_page_naming_the_parameter(
    analyst_client: Any, db: Any, name: str, params: dict[str, str]
) -> None:
    args = [SourceFactory().pk] if name == "source-documents" else []
    response = analyst_client.get(reverse(name, args=args), params)
    assert response.status_code == 400
    field = next(key for key, value in params.items() if "\x00" in value)
    assert f"{field} must not contain NUL characters" in response.content.decode()


def test_a_nul_byte_in_the_ask_form_is_a_400_page_and_no_question_is_stored(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "Where is the Eiffel\x00 Tower?"})
    assert response.status_code == 400
    assert "text must not contain NUL characters" in response.content.decode()
    assert not Question.objects.exists()


def test_a_nul_byte_in_an_api_filter_is_still_the_api_s_json_400(as_analyst: Any, db: Any) -> None:
    response = as_analyst.get("/api/claims/", {"subject": "AA\x00"})
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"subject": ["Must not contain NUL characters."]}


def test_a_nul_byte_in_an_htmx_ask_is_a_400_fragment_the_page_swaps_in(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Where is the Eiffel\x00 Tower?"},
        headers={"HX-Request": "true", "HX-Trigger": "ask-form"},
    )
    assert response.status_code == 400 and response["X-Error-Fragment"] == "1"
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("#result", "innerHTML")
    body = response.content.decode()
    assert 'id="request-error"' in body and "text must not contain NUL characters" in body
    assert "<html" not in body and not Question.objects.exists()

    # A follow-up's refusal goes under its own box, never over the conversation; a form with no
    # slot of its own keeps the plain 400 page (htmx shows nothing, nothing is stored).
    follow_up = analyst_client.post(
        reverse("ask"),
        {"text": "And\x00 its height?", "follows": "1"},
        headers={"HX-Request": "true", "HX-Trigger": "follow-up-form"},
    )
    assert follow_up.status_code == 400 and follow_up["HX-Retarget"] == "#follow-up-errors"
    other = analyst_client.post(reverse("ask"), {"text": "x\x00"}, headers={"HX-Request": "true", "HX-Trigger": "x"})
    assert other.status_code == 400 and "X-Error-Fragment" not in other and "<html" in other.content.decode()
