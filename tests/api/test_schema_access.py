"""The OpenAPI schema and the docs pages are public on purpose (docs/api.md, "Who may read the
schema"): they describe the endpoints, never the data, and every endpoint they describe
still wants a token or a session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import AnalystFactory, QuestionFactory, SourceFactory


@pytest.mark.parametrize("url", ["/api/schema/?format=json", "/api/docs/", "/api/redoc/"])
def test_the_schema_and_its_docs_pages_are_served_without_signing_in(anonymous: Any, db: Any, url: str) -> None:
    assert anonymous.get(url).status_code == 200


def test_the_schema_holds_none_of_the_data(anonymous: Any, db: Any) -> None:
    SourceFactory(name="Zanzibar Gazette", homepage="https://zanzibar-gazette.example/")
    QuestionFactory(text="Who leaked the quarterly numbers?", asked_by=AnalystFactory(username="mallory"))
    schema = anonymous.get("/api/schema/?format=json").content.decode()
    for datum in ("Zanzibar", "zanzibar-gazette", "quarterly numbers", "mallory"):
        assert datum not in schema


def test_the_endpoints_it_describes_still_refuse_an_anonymous_client(anonymous: Any, db: Any) -> None:
    paths = anonymous.get("/api/schema/?format=json").json()["paths"]
    for path in ("/api/sources/", "/api/questions/", "/api/estimation-runs/", "/api/source-groups/"):
        assert path in paths
        assert anonymous.get(path).status_code == 401
