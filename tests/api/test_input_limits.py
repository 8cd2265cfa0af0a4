"""Bodies the parsers cannot take are refused with the API's JSON error envelope, never an
HTML page or a 500: JSON nested deeper than JSON_MAX_DEPTH on every endpoint (the token
endpoint included, anonymously), a deep .json upload by name, and more files than Django
accepts in one upload."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.parsers import JSONParser, MultiPartParser

from core.api.parsers import LimitedJSONParser, LimitedMultiPartParser
from core.models import Question
from sources.models import Source
from tasks.models import Job
from tests.factories import SourceFactory
from tests.helpers import error_of

DEEP = "[" * 100_000 + "]" * 100_000


def post_raw(client: Any, url: str, body: str) -> Any:
    return client.generic("POST", url, body.encode(), content_type="application/json")


def assert_too_deep(response: Any) -> None:
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    error = error_of(response)
    assert error["code"] == "json_too_deep"
    assert "deeper than the limit of 64 levels (JSON_MAX_DEPTH)" in error["message"]


def test_a_hundred_thousand_nested_arrays_on_the_token_endpoint_are_a_400_for_anyone(db, anonymous):
    assert_too_deep(post_raw(anonymous, "/api/token/", DEEP))


@pytest.mark.parametrize("url", ["/api/sources/", "/api/questions/", "/api/documents/", "/api/estimation-runs/"])
def test_deep_json_is_a_400_naming_the_limit_on_every_write_endpoint(as_curator, url):
    before = (Source.objects.count(), Question.objects.count(), Job.objects.count())
    assert_too_deep(post_raw(as_curator, url, DEEP))
    assert (Source.objects.count(), Question.objects.count(), Job.objects.count()) == before


def test_deep_json_inside_an_object_is_refused_too_and_the_limit_follows_the_setting(as_curator, settings):
    settings.JSON_MAX_DEPTH = 4
    response = post_raw(as_curator, "/api/sources/", '{"name": "x", "description": [[[["deep"]]]]}')
    assert response.status_code == 400
    assert "deeper than the limit of 4 levels (JSON_MAX_DEPTH), at line 1" in error_of(response)["message"]
    settings.JSON_MAX_DEPTH = 64
    response = post_raw(as_curator, "/api/sources/", '{"name": "x", "description": [[[["deep"]]]]}')
    assert error_of(response)["fields"] == {"description": ["Not a valid string."]}  # parsed, then validated


def test_an_uploaded_deep_json_file_is_refused_by_name_and_nothing_starts(as_curator):
    source = SourceFactory(name="wiki")
    files = [
        SimpleUploadedFile("good.txt", b"Honey never spoils."),
        SimpleUploadedFile("deep.json", DEEP.encode()),
    ]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {
        "files": ["deep.json, line 1: JSON nested deeper than 64 levels (JSON_MAX_DEPTH)"]
    }
    assert not Job.objects.exists()


def test_more_files_than_django_accepts_are_a_json_400_naming_the_limit(as_curator, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 5
    source = SourceFactory(name="wiki")
    files = [SimpleUploadedFile(f"{i}.txt", f"Fact number {i}.".encode()) for i in range(6)]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    error = error_of(response)
    assert error["code"] == "too_many_files"
    assert error["message"] == "An upload holds at most 5 files (DATA_UPLOAD_MAX_NUMBER_FILES)."
    assert not Job.objects.exists()


def test_the_default_limit_of_a_hundred_files_is_answered_in_json_too(as_curator):
    source = SourceFactory(name="wiki")
    files = [SimpleUploadedFile(f"{i}.txt", b"x") for i in range(101)]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 400
    assert "at most 100 files" in error_of(response)["message"]


def _api_views(patterns: list[Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for entry in patterns:
        if isinstance(entry, URLResolver):
            found.extend(_api_views(entry.url_patterns))
        elif isinstance(entry, URLPattern):
            view_class = getattr(entry.callback, "cls", None)  # set by as_view() on an API view
            if view_class is not None:
                found.append((str(entry.pattern), view_class))
    return found


def test_every_api_view_parses_json_and_multipart_only_through_the_bounded_parsers():
    api = next(r for r in get_resolver().url_patterns if isinstance(r, URLResolver) and r.namespace == "api")
    views = _api_views(api.url_patterns)
    assert {"token/", "schema/"} <= {route for route, _ in views}
    for route, cls in views:
        for parser in cls().get_parsers():
            if isinstance(parser, JSONParser):
                assert isinstance(parser, LimitedJSONParser), (route, parser)
            if isinstance(parser, MultiPartParser):
                assert isinstance(parser, LimitedMultiPartParser), (route, parser)
