"""The source document search shows, for each hit, a short snippet of its matching text with
the query's words marked: bounded, escaped before anything is marked."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from django.urls import reverse

from core.views.documents import SNIPPET_CHARS, snippet_html
from tests.factories import DocumentFactory, SourceFactory

FILLER = " ".join(f"Paragraph {i} is about something unrelated to the search." for i in range(200))


def snippets(page: str) -> list[str]:
    return re.findall(r'<p class="snippet small">(.*?)</p>', page, flags=re.S)


def search(client: Any, source: Any, q: str) -> str:
    response = client.get(reverse("source-documents", args=[source.pk]), {"q": q})
    assert response.status_code == 200
    text: str = response.content.decode()
    return text


def test_each_hit_shows_its_matching_passage_with_the_query_words_marked(analyst_client: Any, db: Any) -> None:
    source = SourceFactory()
    DocumentFactory(
        source=source,
        title="Dracula",
        text=FILLER + " The novel Dracula was written by Bram Stoker and published in 1897. " + FILLER,
    )
    DocumentFactory(source=source, title="Alps", text="The Alps are high.")
    page = search(analyst_client, source, "novels written")  # stemmed as the search is: "novel"
    (snippet,) = snippets(page)
    assert "<mark>novel</mark>" in snippet and "<mark>written</mark>" in snippet
    assert "Bram Stoker" in snippet
    assert not snippet.startswith("Paragraph 0 is")  # the passage that matches, not the document's start
    assert "Alps" not in page


def test_the_snippet_is_bounded(analyst_client: Any, db: Any) -> None:
    source = SourceFactory()
    words = " ".join(["lighthouse"] * 400)
    DocumentFactory(source=source, title="Logbook", text=words)
    (snippet,) = snippets(search(analyst_client, source, "lighthouse"))
    visible = unescape(re.sub(r"</?mark>", "", snippet))
    assert 0 < len(visible) <= SNIPPET_CHARS + 2
    assert snippet.count("<mark>") == snippet.count("</mark>") > 0


def test_document_text_is_escaped_and_cannot_plant_marks(analyst_client: Any, db: Any) -> None:
    source = SourceFactory()
    DocumentFactory(
        source=source,
        title="Trap",
        text='<script>alert("x")</script> <img src=x onerror=alert(1)> The \ue000lighthouse\ue001 keeper'
        ' wrote <mark>nothing</mark>: rule 1 < 2 & 3 > 2 "quoted".',
    )
    page = search(analyst_client, source, "lighthouse keeper")
    (snippet,) = snippets(page)
    assert "<script" not in snippet and "<img" not in snippet  # markup never comes through as markup
    assert "1 &lt; 2 &amp; 3 &gt; 2" in snippet and "&quot;quoted" in snippet
    # The only marks are the query's words: none planted by the text (nor by the marker characters).
    assert re.findall(r"<mark>(.*?)</mark>", snippet) == ["lighthouse", "keeper"]
    assert "\ue000" not in page and "\ue001" not in page


def test_no_snippet_without_a_search(analyst_client: Any, db: Any) -> None:
    source = SourceFactory()
    DocumentFactory(source=source, title="Rivers", text="The Danube flows through Vienna.")
    page = analyst_client.get(reverse("source-documents", args=[source.pk])).content.decode()
    assert "Rivers" in page and snippets(page) == []


def test_snippet_html_closes_a_mark_the_cut_left_open_and_counts_only_visible_characters() -> None:
    headline = "a a a \ue000" + "b" * 50 + "\ue001 c"
    html = snippet_html(headline, limit=30)
    assert html == "a a a <mark>" + "b" * 24 + "</mark> …"
    assert snippet_html("word " * 100, limit=40) == ("word " * 8).strip() + " …"
    assert snippet_html("x\ue001 y \ue000z") == "x y <mark>z</mark>"
    assert snippet_html("<b>\ue000hi\ue001</b>") == "&lt;b&gt;<mark>hi</mark>&lt;/b&gt;"
