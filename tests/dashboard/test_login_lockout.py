"""The login forms (/login/ and /admin/login/) lock out an account, and separately a client
address, after repeated failed logins (django-axes), with a page that says so."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.factories import PASSWORD, CuratorFactory

LIMIT = 3


@pytest.fixture(autouse=True)
def failure_limit(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT


def log_in(url: str, username: str, password: str, address: str) -> tuple[Client, Any]:
    client = Client()
    response = client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)
    return client, response


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_a_login_form_locks_an_account_after_repeated_failures_from_any_address(db: Any, url: str) -> None:
    CuratorFactory(username="carol", is_staff=True)  # may use the admin
    for n in range(LIMIT):
        log_in(url, "carol", f"guess {n}", f"10.4.0.{n}")
    client, response = log_in(url, "carol", PASSWORD, "10.4.0.200")
    assert response.status_code == 429
    page = response.content.decode()
    assert 'id="locked-out"' in page and "Too many failed logins" in page
    assert int(response["Retry-After"]) == 15 * 60
    assert not signed_in(client)


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_a_login_form_locks_an_address_after_failures_across_accounts(db: Any, url: str) -> None:
    CuratorFactory(username="carol", is_staff=True)  # may use the admin
    for n in range(LIMIT):
        log_in(url, f"someone-{n}", "guess", "10.5.0.1")
    client, response = log_in(url, "carol", PASSWORD, "10.5.0.1")
    assert response.status_code == 429
    assert not signed_in(client)
    client, response = log_in(url, "carol", PASSWORD, "10.5.0.2")  # another address: the account is fine
    assert response.status_code == 302
    assert signed_in(client)


def test_failures_below_the_limit_still_let_the_right_password_in(db: Any) -> None:
    CuratorFactory(username="carol", is_staff=True)  # may use the admin
    for n in range(LIMIT - 1):
        _, response = log_in("/login/", "carol", f"guess {n}", "10.6.0.1")
        assert response.status_code == 200 and "correct username and password" in response.content.decode()
    client, response = log_in("/login/", "carol", PASSWORD, "10.6.0.1")
    assert response.status_code == 302
    assert signed_in(client)
