"""Schemathesis against the served OpenAPI schema, as a curator: no 5xx, nothing off-schema.

Every operation is exercised, writes included. Asking a question and starting a run only
enqueue a job (the test database never commits, so no task is sent); the `wait` of an ask
is cut to nothing so a generated `wait: 30` cannot stall the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, settings
from rest_framework.test import APIClient
from schemathesis.specs.openapi.checks import ignored_auth

from tasks.models import Job
from tests.api.helpers import answered_question, demo_query_set, finished_run
from tests.factories import CuratorFactory, DocumentFactory, SourceFactory
from tests.helpers import token_header


@pytest.fixture
def api_schema(db: Any, settings: Any, monkeypatch: Any) -> Iterator[Any]:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "100000/minute", "anon": "100000/minute", "ask": "100000/minute"},
    }
    monkeypatch.setattr("core.api.views.engine.wait_for_job", lambda job_id, timeout=None: Job.objects.get(pk=job_id))
    # A little of everything, so ids in generated paths sometimes exist.
    source = SourceFactory(name="wiki", chunk_count=2)
    DocumentFactory(source=source)
    finished_run([source], [0.7])
    demo_query_set(2)
    answered_question()
    document = APIClient().get("/api/schema/?format=json")
    assert document.status_code == 200
    # As Django's test client does (and re-does after each of its requests, hence only now):
    # the request signals must not close the connection that holds the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.from_dict(document.json(), app=get_wsgi_application())
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


schema = schemathesis.from_pytest_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_gives_a_server_error_or_contradicts_the_schema(case: Any) -> None:
    from django.contrib.auth.models import User

    # Looked up first: the factory would hash the password again on every example.
    curator = User.objects.filter(username="fuzz-curator").first() or CuratorFactory(username="fuzz-curator")
    token = token_header(curator)
    with transaction.atomic():  # each example on its own, as if committed, then undone
        response = case.call_wsgi(headers={"Authorization": token})
        transaction.set_rollback(True)
    # Whether each operation enforces authentication is pinned by test_auth_and_roles.py; the
    # replay check would resend the explicit token header and so cannot tell.
    case.validate_response(response, excluded_checks=[ignored_auth])
