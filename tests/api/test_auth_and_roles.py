"""Who may do what: tokens for tools, sessions for the browser, analysts read, curators write."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import PASSWORD, SourceFactory
from tests.helpers import error_of

READ_URLS = [
    "/api/sources/",
    "/api/documents/",
    "/api/questions/",
    "/api/estimation-runs/",
    "/api/jobs/",
    "/api/conflicts/",
]


@pytest.mark.parametrize("url", READ_URLS)
def test_an_anonymous_request_gets_401_with_a_token_challenge(anonymous, url, db):
    response = anonymous.get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert error_of(response)["code"] == "not_authenticated"


@pytest.mark.parametrize("url", READ_URLS)
def test_a_user_without_a_role_gets_403(as_nobody, url):
    response = as_nobody.get(url)
    assert response.status_code == 403
    assert error_of(response)["code"] == "permission_denied"


@pytest.mark.parametrize("url", READ_URLS)
def test_an_analyst_and_a_curator_can_read_everything(as_analyst, as_curator, url):
    assert as_analyst.get(url).status_code == 200
    assert as_curator.get(url).status_code == 200


def test_an_analyst_cannot_change_sources(as_analyst):
    source = SourceFactory(name="gazette")
    assert as_analyst.post("/api/sources/", {"name": "new"}, format="json").status_code == 403
    assert as_analyst.patch(f"/api/sources/{source.pk}/", {"description": "x"}, format="json").status_code == 403
    assert as_analyst.delete(f"/api/sources/{source.pk}/").status_code == 403
    response = as_analyst.post(f"/api/sources/{source.pk}/deactivate/")
    assert response.status_code == 403
    assert "curator" in error_of(response)["message"]
    source.refresh_from_db()
    assert source.active


def test_an_analyst_cannot_upload_documents_or_start_runs(as_analyst):
    source = SourceFactory(name="gazette")
    body = {"source": source.pk, "documents": [{"text": "Hello."}]}
    assert as_analyst.post("/api/documents/", body, format="json").status_code == 403
    assert as_analyst.post("/api/estimation-runs/", {}, format="json").status_code == 403


def test_an_invalid_token_gets_401(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    response = client.get("/api/sources/")
    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


def test_a_revoked_token_stops_working(analyst, as_analyst):
    assert as_analyst.get("/api/sources/").status_code == 200
    Token.objects.filter(user=analyst).delete()
    assert as_analyst.get("/api/sources/").status_code == 401


def test_a_deactivated_accounts_token_gets_401(analyst, as_analyst):
    analyst.is_active = False
    analyst.save()
    assert as_analyst.get("/api/sources/").status_code == 401


def test_a_token_acts_as_its_owner_whoever_sends_it(client, curator, analyst):
    """A curator's browser session sending an analyst's token is the analyst: the token wins."""
    client.force_login(curator)
    analyst_token = Token.objects.create(user=analyst)
    response = client.post(
        "/api/sources/",
        {"name": "new"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {analyst_token.key}",
    )
    assert response.status_code == 403


def test_a_browser_session_authenticates_and_needs_the_csrf_token_to_write(curator):
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(curator)
    assert browser.get("/api/sources/").status_code == 200
    response = browser.post("/api/sources/", {"name": "new"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in error_of(response)["message"]


def test_the_token_endpoint_exchanges_a_password_for_the_token(curator):
    response = APIClient().post("/api/token/", {"username": curator.username, "password": PASSWORD}, format="json")
    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=curator).key


def test_the_token_endpoint_refuses_a_wrong_password(curator):
    response = APIClient().post("/api/token/", {"username": curator.username, "password": "guess"}, format="json")
    assert response.status_code == 400
    assert "credentials" in error_of(response)["message"]
