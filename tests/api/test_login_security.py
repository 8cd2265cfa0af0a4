"""Password guessing on POST /api/token/: the throttle counts per real client address (a
forged X-Forwarded-For changes nothing), its counts live in a cache every web process
shares, and django-axes locks an account at one address after repeated failures there, and the
address as a whole only after many more across accounts."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connections
from django.test import RequestFactory
from rest_framework.test import APIClient

from reliability_site.client_ip import client_ip
from tests.factories import PASSWORD, CuratorFactory
from tests.helpers import error_of

TOKEN_URL = "/api/token/"


def ask_token(username: str, password: str, address: str = "127.0.0.1", **headers: str) -> Any:
    environ: dict[str, Any] = {"REMOTE_ADDR": address, **headers}  # the client's address and its headers
    return APIClient().post(TOKEN_URL, {"username": username, "password": password}, format="json", **environ)


@pytest.fixture
def login_rate(settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "3/minute"},
    }


@pytest.fixture
def failure_limit(settings: Any) -> int:
    settings.AXES_FAILURE_LIMIT = 3
    return 3


def test_a_forged_x_forwarded_for_does_not_reset_the_token_throttle(db, login_rate, settings):
    assert settings.TRUSTED_PROXY_COUNT == 0
    for n in range(3):
        ask_token("nobody-here", "guess", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}")
    response = ask_token("nobody-here", "guess", HTTP_X_FORWARDED_FOR="10.0.0.99")
    assert response.status_code == 429
    assert error_of(response)["code"] == "throttled"
    # Another real address still has its own allowance.
    assert ask_token("nobody-here", "guess", address="192.0.2.7").status_code == 400


def test_behind_one_trusted_proxy_the_address_it_saw_is_the_client(db, login_rate, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = "10.9.9.9"
    for _ in range(3):
        ask_token("nobody-here", "guess", address=proxy, HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.5")
    # The client forged its left-most entry; the proxy appended the real one.
    blocked = ask_token("nobody-here", "guess", address=proxy, HTTP_X_FORWARDED_FOR="8.8.8.8, 203.0.113.5")
    assert blocked.status_code == 429
    other = ask_token("nobody-here", "guess", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert other.status_code == 400


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "", "192.0.2.1"),
        (0, "10.0.0.1", "192.0.2.1"),
        (1, "10.0.0.1", "10.0.0.1"),
        (1, "6.6.6.6, 10.0.0.1", "10.0.0.1"),
        (2, "6.6.6.6, 10.0.0.1, 10.0.0.2", "10.0.0.1"),
        (3, "10.0.0.1", "10.0.0.1"),
    ],
)
def test_the_client_address_believes_x_forwarded_for_only_as_far_as_the_trusted_proxies(
    settings, proxies, forwarded, expected
):
    settings.TRUSTED_PROXY_COUNT = proxies
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.1", **headers)
    assert client_ip(request) == expected


def test_throttle_counts_live_in_the_database_cache_that_every_process_shares(transactional_db, settings):
    config = settings.CACHES["default"]
    assert config["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert config["LOCATION"] == "django_cache"
    for _ in range(2):
        ask_token("nobody-here", "guess", address="198.51.100.4")

    seen: dict[str, Any] = {}

    def other_process() -> None:
        # A new thread has its own cache object and its own database connection, as another
        # gunicorn worker would: it sees the two requests and adds a third.
        try:
            other = caches["default"]
            seen["history"] = other.get("throttle_anon_198.51.100.4")
            other.set("throttle_anon_198.51.100.4", [*seen["history"], seen["history"][0]], 60)
            seen["connection"] = id(connections["default"])
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_process)
    thread.start()
    thread.join()
    assert len(seen["history"]) == 2
    assert seen["connection"] != id(connections["default"])
    assert len(caches["default"].get("throttle_anon_198.51.100.4")) == 3


def test_the_token_endpoint_locks_an_account_out_at_the_address_its_failures_came_from(db, failure_limit):
    CuratorFactory(username="carol")
    codes = [ask_token("carol", f"guess {n}", address="10.1.0.1").status_code for n in range(failure_limit)]
    assert codes == [400] * (failure_limit - 1) + [429]  # the failure that reaches the limit locks
    response = ask_token("carol", PASSWORD, address="10.1.0.1")  # the right password, the same address
    assert response.status_code == 429
    error = error_of(response)
    assert error["code"] == "locked_out"
    assert "Too many failed logins" in error["message"]
    assert int(response["Retry-After"]) == 15 * 60
    assert "token" not in response.json()
    CuratorFactory(username="dave")
    assert ask_token("dave", PASSWORD, address="10.1.0.1").status_code == 200  # the address is not blocked
    assert ask_token("carol", PASSWORD, address="10.1.0.2").status_code == 200  # nor the account elsewhere


def test_the_token_endpoint_locks_an_address_only_after_many_failures_across_accounts(db, failure_limit, settings):
    settings.AXES_ADDRESS_FAILURE_FACTOR = 2
    CuratorFactory(username="carol")
    names = [f"someone-{n}" for n in range(failure_limit * 2)]
    codes = [ask_token(name, "guess", address="10.2.0.1").status_code for name in names]
    assert codes == [400] * (failure_limit * 2 - 1) + [429]
    response = ask_token("carol", PASSWORD, address="10.2.0.1")
    assert response.status_code == 429
    assert error_of(response)["code"] == "locked_out"
    assert ask_token("carol", PASSWORD, address="10.2.0.2").status_code == 200  # the account is not blocked


def test_a_locked_out_address_cannot_dodge_the_lockout_with_x_forwarded_for(db, failure_limit, settings):
    settings.AXES_ADDRESS_FAILURE_FACTOR = 1  # the address locks as soon as an account would
    CuratorFactory(username="carol")
    for n in range(failure_limit):
        ask_token(f"someone-{n}", "guess", address="10.3.0.1", HTTP_X_FORWARDED_FOR=f"172.16.0.{n}")
    response = ask_token("carol", PASSWORD, address="10.3.0.1", HTTP_X_FORWARDED_FOR="172.16.9.9")
    assert response.status_code == 429
