"""A question asked with a private source group shows the group's name and sources only to
those who may see the group (its owner; everyone once shared) and to the asker: on the
question page, its result panel and the API. Other analysts read that a private group was
asked, and the sources the asker named themselves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import Question, SourceGroup
from tests.factories import AnalystFactory, QuestionFactory, SourceFactory

SECRETS = ("Bob's desk", "Hidden wire", "Secret almanac")


@dataclass
class Asked:
    bob: Any
    group: SourceGroup
    question: Question


@pytest.fixture
def asked(db: Any) -> Asked:
    """Bob asked with his private group "Bob's desk" (two sources) plus "Open feed" he named."""
    bob = AnalystFactory(username="bob")
    hidden, almanac, feed = (SourceFactory(name=n) for n in ("Hidden wire", "Secret almanac", "Open feed"))
    group = SourceGroup.objects.create(name="Bob's desk", shared=False, owner=bob)
    group.sources.set([hidden, almanac])
    question = QuestionFactory(
        text="Who wrote Dracula?",
        answered=True,
        asked_by=bob,
        source_selection={
            "include": [{"id": feed.pk, "name": "Open feed"}],
            "exclude": [],
            "group": {"id": group.pk, "name": "Bob's desk"},
            "allowed": [{"id": s.pk, "name": s.name} for s in (feed, hidden, almanac)],
        },
    )
    return Asked(bob=bob, group=group, question=question)


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_as(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def pages(client: Client, question: Question) -> list[str]:
    return [
        client.get(reverse(name, args=[question.pk])).content.decode() for name in ("question-detail", "question-panel")
    ]


def test_another_analyst_sees_neither_the_private_groups_name_nor_its_sources(
    analyst_client: Any, asked: Asked
) -> None:
    for content in pages(analyst_client, asked.question):
        assert 'id="source-selection"' in content
        assert "The sources of a private group and “Open feed”" in content
        assert 'id="private-group"' in content
        assert not [secret for secret in SECRETS if secret.replace("'", "&#x27;") in content]
        assert 'id="allowed-sources"' not in content and "allowed)" not in content


def test_the_asker_and_the_groups_owner_see_it_whole(asked: Asked) -> None:
    for content in pages(signed_in(asked.bob), asked.question):
        assert "The sources of the group “Bob&#x27;s desk” and “Open feed”" in content
        assert '<span id="allowed-sources">Open feed, Hidden wire, Secret almanac</span>' in content
        assert 'id="private-group"' not in content


def test_a_shared_group_is_shown_to_everyone(analyst_client: Any, asked: Asked) -> None:
    SourceGroup.objects.filter(pk=asked.group.pk).update(shared=True)
    for content in pages(analyst_client, asked.question):
        assert "The sources of the group “Bob&#x27;s desk”" in content and "Hidden wire" in content


def test_the_api_hides_the_private_group_from_another_analyst(as_analyst: Any, asked: Asked) -> None:
    hidden = {
        "include": [{"id": asked.question.source_selection["include"][0]["id"], "name": "Open feed"}],
        "exclude": [],
        "group": None,
        "private_group": True,
    }
    detail = as_analyst.get(f"/api/questions/{asked.question.pk}/").json()
    assert detail["source_selection"] == hidden
    listed = as_analyst.get("/api/questions/").json()["results"]
    assert [q["source_selection"] for q in listed] == [hidden]
    assert not [secret for secret in SECRETS if secret in str(detail) + str(listed)]


def test_the_api_shows_the_asker_their_own_group(asked: Asked) -> None:
    detail = api_as(asked.bob).get(f"/api/questions/{asked.question.pk}/").json()
    assert detail["source_selection"]["group"] == {"id": asked.group.pk, "name": "Bob's desk"}
    assert [s["name"] for s in detail["source_selection"]["allowed"]] == ["Open feed", "Hidden wire", "Secret almanac"]
    assert "private_group" not in detail["source_selection"]


def test_a_deleted_private_group_stays_hidden(analyst_client: Any, asked: Asked) -> None:
    asked.group.delete()
    for content in pages(analyst_client, asked.question):
        assert "Bob&#x27;s desk" not in content and "Hidden wire" not in content
