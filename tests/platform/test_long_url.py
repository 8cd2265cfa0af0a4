"""An over-long address is answered 414 in the product's own form (issue 38 row 13): the API's
JSON error on /api/ paths, the site's error page elsewhere, never the web server's bare HTML;
scripts/run.sh lets gunicorn pass such a request line on to Django."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from django.test import Client
from rest_framework.test import APIClient

from reliability_site.long_url import MAX_URL_CHARS, SERVER_LINE_LIMIT

ROOT = Path(__file__).resolve().parents[2]


def test_an_over_long_page_address_gets_the_sites_414_page(analyst_client: Client) -> None:
    address = "/questions/?q=" + "a" * (MAX_URL_CHARS + 50)
    response = analyst_client.get(address)
    assert response.status_code == 414
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert 'id="error-414"' in page and f"at most {MAX_URL_CHARS}" in page
    assert '<nav aria-label="Main">' in page  # the product's page, with its navigation
    assert "alice" in page  # the signed-in user's, as every page


def test_an_over_long_api_address_gets_the_apis_json_error(as_analyst: APIClient) -> None:
    response = as_analyst.get("/api/sources/?search=" + "%E2%82%AC" * 600)  # 5,400 characters as sent
    assert response.status_code == 414
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "uri_too_long" and error["fields"] == {}
    assert f"at most {MAX_URL_CHARS}" in error["message"]


def test_an_address_within_the_limit_is_served_as_usual(analyst_client: Client, as_analyst: APIClient) -> None:
    query = "?ref=" + "a" * (MAX_URL_CHARS - len("/questions/?ref="))  # a parameter the page ignores
    assert len("/questions/" + query) == MAX_URL_CHARS
    assert analyst_client.get("/questions/" + query).status_code == 200
    assert as_analyst.get("/api/sources/?search=" + "a" * 100).status_code == 200


def test_gunicorn_in_run_sh_passes_request_lines_up_to_its_maximum_on_to_django() -> None:
    script = (ROOT / "scripts" / "run.sh").read_text()
    command = re.search(r"^\.venv/bin/gunicorn .*?[^\\]$", script, re.MULTILINE | re.DOTALL)
    assert command is not None
    words = shlex.split(command.group(0).replace("\\\n", " "))
    assert words[words.index("--limit-request-line") + 1] == str(SERVER_LINE_LIMIT)
    # gunicorn's maximum; the product's own limit leaves room for the method and the protocol.
    assert SERVER_LINE_LIMIT == 8190 and MAX_URL_CHARS + len("OPTIONS  HTTP/1.1") < SERVER_LINE_LIMIT
