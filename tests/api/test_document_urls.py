"""A document's URL becomes a link on the dashboard and in the admin: an upload whose record
carries anything but an absolute http(s) URL is refused whole, naming the record and field."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sources.models import Document
from tasks.models import Job
from tests.factories import SourceFactory
from tests.helpers import error_of

BAD_URLS = [
    "javascript:alert(document.cookie)",
    " JavaScript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "/relative/path",
    "ftp://files.example.org/doc",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_json_upload_with_a_non_http_url_is_refused_naming_the_record_and_nothing_is_stored(as_curator, url):
    source = SourceFactory(name="gazette")
    body = {
        "source": source.pk,
        "documents": [{"text": "Fine.", "url": "https://ok.example/1"}, {"text": "X", "url": url}],
    }
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["fields"] == {"documents.1.url": ["only http and https URLs are accepted"]}
    assert error["message"] == "documents.1.url: only http and https URLs are accepted"
    assert not Document.objects.exists()
    assert not Job.objects.exists()


def test_the_first_record_of_the_reported_upload_is_named_documents_0_url(as_curator):
    source = SourceFactory(name="gazette")
    body = {"source": source.pk, "documents": [{"text": "Hello.", "url": "javascript:alert(document.cookie)"}]}
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 400
    assert error_of(response)["message"] == "documents.0.url: only http and https URLs are accepted"


def test_a_multipart_file_with_a_javascript_url_is_refused_naming_file_line_and_field(as_curator):
    source = SourceFactory(name="gazette")
    data = b'{"text": "Fine.", "url": "https://ok.example/1"}\n{"text": "Bad.", "url": "javascript:alert(1)"}\n'
    upload = SimpleUploadedFile("notes.jsonl", data, content_type="application/octet-stream")
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": [upload]}, format="multipart")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {
        "files": ["notes.jsonl, line 2, field 'url': only http and https URLs are accepted"]
    }
    assert not Document.objects.exists()
    assert not Job.objects.exists()


def test_http_and_https_urls_are_accepted(as_curator):
    source = SourceFactory(name="gazette")
    body = {
        "source": source.pk,
        "documents": [
            {"text": "One.", "url": "https://news.example.org/a?b=1#c"},
            {"text": "Two.", "url": "http://news.example.org/b"},
            {"text": "Three.", "url": ""},
            {"text": "Four."},
        ],
    }
    assert as_curator.post("/api/documents/", body, format="json").status_code == 202
