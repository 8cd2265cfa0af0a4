"""The login forms (/login/ and /admin/login/) lock out an account at one client address after
repeated failed logins there, and the address as a whole only after many times as many across
accounts (django-axes, core/lockout.py), with a page that says so."""

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
def test_a_login_form_locks_an_account_at_the_address_its_failures_came_from(db: Any, url: str) -> None:
    CuratorFactory(username="carol", is_staff=True)  # may use the admin
    for n in range(LIMIT):
        log_in(url, "carol", f"guess {n}", "10.4.0.1")
    client, response = log_in(url, "carol", PASSWORD, "10.4.0.1")
    assert response.status_code == 429
    page = response.content.decode()
    assert 'id="locked-out"' in page and "Too many failed logins" in page
    assert int(response["Retry-After"]) == 15 * 60
    assert not signed_in(client)
    client, response = log_in(url, "carol", PASSWORD, "10.4.0.2")  # from elsewhere, the account is fine
    assert response.status_code == 302 and signed_in(client)


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_one_account_locked_out_does_not_lock_another_behind_the_same_address(db: Any, url: str) -> None:
    CuratorFactory(username="carol", is_staff=True)
    CuratorFactory(username="dave", is_staff=True)
    for n in range(LIMIT + 2):  # carol keeps trying, locked out
        log_in(url, "carol", f"guess {n}", "10.5.0.1")
    assert log_in(url, "carol", PASSWORD, "10.5.0.1")[1].status_code == 429
    client, response = log_in(url, "dave", PASSWORD, "10.5.0.1")  # a colleague behind the same NAT
    assert response.status_code == 302 and signed_in(client)


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_an_address_is_locked_only_after_many_failures_across_accounts(db: Any, url: str, settings: Any) -> None:
    settings.AXES_ADDRESS_FAILURE_FACTOR = 3  # the address locks at 3 x LIMIT failures
    CuratorFactory(username="carol", is_staff=True)
    attempts = [f"someone-{n}" for n in range(LIMIT * 3 - 1)]  # each name fails once
    for username in attempts:
        log_in(url, username, "guess", "10.8.0.1")
    client, response = log_in(url, "carol", PASSWORD, "10.8.0.1")  # one below the address limit
    assert response.status_code == 302 and signed_in(client)
    log_in(url, "someone-else", "guess", "10.8.0.1")  # reaches it
    client, response = log_in(url, "carol", PASSWORD, "10.8.0.1")
    assert response.status_code == 429 and not signed_in(client)
    client, response = log_in(url, "carol", PASSWORD, "10.8.0.2")  # another address: the account is fine
    assert response.status_code == 302 and signed_in(client)


def test_failures_below_the_limit_still_let_the_right_password_in(db: Any) -> None:
    CuratorFactory(username="carol", is_staff=True)  # may use the admin
    for n in range(LIMIT - 1):
        _, response = log_in("/login/", "carol", f"guess {n}", "10.6.0.1")
        assert response.status_code == 200 and "correct username and password" in response.content.decode()
    client, response = log_in("/login/", "carol", PASSWORD, "10.6.0.1")
    assert response.status_code == 302
    assert signed_in(client)
