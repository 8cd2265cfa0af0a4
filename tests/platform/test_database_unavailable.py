"""The database out of reach answers 503 with Retry-After, a page that needs no database and
the API's error shape, not a 500 (issue 38 row 13)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import InterfaceError, OperationalError
from django.urls import reverse


@pytest.mark.parametrize("error", [OperationalError("server closed the connection"), InterfaceError("closed")])
def test_a_page_and_the_api_answer_503_while_the_database_is_out_of_reach(
    analyst_client: Any, as_analyst: Any, monkeypatch: Any, error: Exception
) -> None:
    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr("tasks.views.describe_jobs", unreachable)
    page = analyst_client.get(reverse("job-list"))
    assert page.status_code == 503 and page["Retry-After"] == "30"
    assert 'id="error-503"' in page.content.decode() and "database is out of reach" in page.content.decode()

    monkeypatch.setattr("core.api.views.engine.JobViewSet.get_queryset", unreachable)
    response = as_analyst.get("/api/jobs/")
    assert response.status_code == 503 and response["Retry-After"] == "30"
    assert response.json()["error"]["code"] == "database_unavailable"


def test_other_errors_stay_a_500(analyst_client: Any, monkeypatch: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr("tasks.views.describe_jobs", broken)
    analyst_client.raise_request_exception = False
    assert analyst_client.get(reverse("job-list")).status_code == 500
