"""A stored URL that is not an absolute http(s) URL (a `javascript:` URL saved before
ingestion checked URLs) is never rendered as a clickable href: not on the source page, not in
a question's passages, not in the admin."""

from __future__ import annotations

import re
from typing import Any

from django.template import Context, Template
from django.urls import reverse

from sources.models import Document, Source
from tests.factories import DocumentFactory, QuestionFactory, SourceFactory, VoteFactory

EVIL = "javascript:alert(document.cookie)"


def hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_the_source_page_links_only_http_urls(analyst_client: Any) -> None:
    source = SourceFactory(name="gazette", homepage="")
    Source.objects.filter(pk=source.pk).update(homepage="javascript:alert(1)")  # an old row, saved unchecked
    DocumentFactory(source=source, title="Old evil", url=EVIL)
    DocumentFactory(source=source, title="Fine", url="https://gazette.example/fine")
    page = analyst_client.get(reverse("source-detail", args=[source.pk])).content.decode()
    assert "Old evil" in page  # still listed, as plain text
    assert "https://gazette.example/fine" in hrefs(page)
    assert not [h for h in hrefs(page) if not h.startswith(("/", "https://", "http://"))]
    assert "javascript:" not in page.lower()


def test_question_passages_link_only_http_urls(analyst_client: Any) -> None:
    question = QuestionFactory(answered=True)
    passage = {"chunk_id": 1, "document_id": 1, "distance": 0.2, "text": "Paris is the capital."}
    VoteFactory(question=question, rank=0, passages=[{**passage, "title": "Evil doc", "url": EVIL}])
    VoteFactory(question=question, rank=1, passages=[{**passage, "title": "Good doc", "url": "https://ok.example/d"}])
    for url in (reverse("question-detail", args=[question.pk]), reverse("question-panel", args=[question.pk])):
        page = analyst_client.get(url).content.decode()
        assert "Evil doc" in page
        assert "https://ok.example/d" in hrefs(page)
        assert "javascript:" not in page.lower()


def test_the_admin_document_list_links_only_http_urls(admin_client: Any) -> None:
    DocumentFactory(title="Old evil", url=EVIL)
    DocumentFactory(title="Fine", url="https://gazette.example/fine")
    page = admin_client.get("/admin/sources/document/").content.decode()
    assert "https://gazette.example/fine" in hrefs(page)
    assert not [h for h in hrefs(page) if h.lower().startswith("javascript:")]
    assert "not a web link" in page


def test_the_admin_document_form_refuses_a_javascript_url(admin_client: Any) -> None:
    document = DocumentFactory(title="Doc", url="https://gazette.example/doc")
    change_url = f"/admin/sources/document/{document.pk}/change/"
    page = admin_client.get(change_url).content.decode()
    assert "https://gazette.example/doc" in hrefs(page)
    form = {
        "source": document.source_id,
        "title": "Doc",
        "text": document.text,
        "url": EVIL,
        "published_at_0": "",
        "published_at_1": "",
        "metadata": "{}",
        "job": "",
    }
    for bad in (EVIL, "ftp://files.example.org/doc"):
        response = admin_client.post(change_url, {**form, "url": bad})
        assert response.status_code == 200  # the form again, with the error
        assert "errorlist" in response.content.decode()
        assert Document.objects.get(pk=document.pk).url == "https://gazette.example/doc"
    response = admin_client.post(change_url, {**form, "url": "ftp://files.example.org/doc"})
    assert "Only http and https URLs are accepted." in response.content.decode()


def test_the_http_url_filter_turns_anything_else_into_no_link() -> None:
    template = Template("{% load safe_links %}[{{ url|http_url }}]")
    assert template.render(Context({"url": "https://a.example/x?y=1&z=2"})) == "[https://a.example/x?y=1&amp;z=2]"
    for bad in (EVIL, "data:text/html,hi", "//evil.example", "", None):
        assert template.render(Context({"url": bad})) == "[]"
