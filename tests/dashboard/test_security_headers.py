"""Every response carries a Content-Security-Policy that allows scripts from this server
only; no page of ours needs inline script or inline style to work."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]


def policy(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: sources for name, *sources in directives}


def assert_strict(response: Any) -> dict[str, list[str]]:
    csp = policy(response)
    assert csp["script-src"] == ["'self'"]
    assert "'unsafe-inline'" not in csp["script-src"] and "'unsafe-eval'" not in csp["script-src"]
    assert csp["object-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["base-uri"] == ["'self'"]
    assert csp["form-action"] == ["'self'"]
    return csp


def test_a_dashboard_page_sends_a_strict_policy_without_inline_style(analyst_client: Any, world: Any) -> None:
    response = analyst_client.get(reverse("question-detail", args=[world.question.pk]))
    assert response.status_code == 200
    assert assert_strict(response)["style-src"] == ["'self'"]


def test_the_admin_login_sends_the_policy(client: Any, db: Any) -> None:
    assert_strict(client.get("/admin/login/"))


def test_an_api_response_sends_the_policy(as_analyst: Any) -> None:
    response = as_analyst.get("/api/sources/")
    assert response.status_code == 200
    assert_strict(response)


def test_an_error_page_sends_the_policy(anonymous: Any, db: Any) -> None:
    response = anonymous.get("/api/sources/")
    assert response.status_code == 401
    assert_strict(response)


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_the_api_docs_keep_the_script_policy_and_load_no_inline_script(anonymous: Any, db: Any, url: str) -> None:
    response = anonymous.get(url)
    assert response.status_code == 200
    csp = assert_strict(response)
    assert "'unsafe-inline'" in csp["style-src"]  # Swagger UI and Redoc style their pages inline
    page = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)
    assert "fonts.googleapis.com" not in page


def test_swagger_ui_start_up_script_is_a_file_from_this_server(anonymous: Any, db: Any) -> None:
    page = anonymous.get("/api/docs/").content.decode()
    script = re.findall(r'<script src="([^"]+)"', page)[-1].replace("&amp;", "&")
    response = anonymous.get(script)
    assert response.status_code == 200
    assert "SwaggerUIBundle" in response.content.decode()


def test_pages_have_the_htmx_indicator_style_in_the_stylesheet_not_injected(analyst_client: Any, world: Any) -> None:
    page = analyst_client.get(reverse("ask")).content.decode()
    assert '"includeIndicatorStyles": false' in page
    assert ".htmx-indicator" in (ROOT / "static" / "css" / "dashboard.css").read_text()


def test_no_template_has_inline_script_event_handlers_or_style_attributes() -> None:
    offenders = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        if path.parts[-2] == "drf_spectacular":
            continue  # the API docs pages: their own policy, checked above
        text = path.read_text()
        for pattern in (r"<script(?![^>]*\bsrc=)[^>]*>", r"\son[a-z]+\s*=", r"\sstyle\s*=", r"javascript:"):
            offenders += [f"{path.relative_to(ROOT)}: {m.group(0).strip()}" for m in re.finditer(pattern, text)]
    assert offenders == []
