"""The glossary: one page of every term, and vote-table headings that link to their entry and
carry the short explanation (reachable by keyboard and touch, not only on hover)."""

from __future__ import annotations

import html
import re
from typing import Any

from django.urls import reverse

from core.glossary import TERMS, term
from tests.factories import QuestionFactory, SourceFactory, VoteFactory


def test_the_glossary_lists_every_term_with_an_anchor(analyst_client: Any, db: Any) -> None:
    content = analyst_client.get(reverse("glossary")).content.decode()
    for entry in TERMS:
        assert f'<dt id="{entry.slug}">{html.escape(entry.name)}</dt>' in content
        assert html.escape(entry.text) in content
    assert len({t.slug for t in TERMS}) == len(TERMS)


def test_the_glossary_is_for_signed_in_users(client: Any, db: Any) -> None:
    response = client.get(reverse("glossary"))
    assert response.status_code == 302 and "login" in response["Location"]


def test_vote_table_headings_link_to_their_explanations(analyst_client: Any, db: Any) -> None:
    source = SourceFactory(name="Atlas", reliability=0.9)
    question = QuestionFactory(
        answered=True, clusters=[{"id": 0, "label": "Paris", "members": [source.pk], "weight": 1.0}]
    )
    VoteFactory(question=question, source=source, reliability=0.9)
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    head = content.split('id="vote-table"', 1)[1].split("</thead>", 1)[0]
    links = re.findall(r'<a class="term" href="([^"]+)" title="([^"]+)">', head)
    assert [h.rsplit("#", 1)[1] for h, _ in links] == [
        "interval",
        "response",
        "filter",
        "alignment",
        "cluster",
        "weight",
    ]
    for href, title in links:
        assert href.startswith(reverse("glossary") + "#")
        assert html.unescape(title) == term(href.rsplit("#", 1)[1]).short
