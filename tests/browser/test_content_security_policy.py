"""Under the Content-Security-Policy every page still works in a real browser and the browser
reports no violation: the dashboard (htmx, the job filter's script), the admin, and the API
docs (Swagger UI and Redoc, served from this server)."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.helpers import csp_violations, watch_csp
from tests.factories import JobFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def wait_for(driver: Any, css: str, seconds: int = 30) -> Any:
    return WebDriverWait(driver, seconds).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_dashboard_and_admin_pages_work_with_no_policy_violation(
    browser: Any, live_server: Any, admin_user: Any
) -> None:
    JobFactory(kind="ingest")
    JobFactory(kind="ask")
    watch_csp(browser)
    base = live_server.url
    browser.get(f"{base}/login/")
    browser.find_element(By.NAME, "username").send_keys(admin_user.username)
    browser.find_element(By.NAME, "password").send_keys("password")
    browser.find_element(By.ID, "login-button").click()
    wait_for(browser, "#ask-form")
    assert browser.execute_script("return typeof window.htmx") == "object"
    assert browser.execute_script("return document.querySelectorAll('style').length") == 0  # htmx injected none
    assert csp_violations(browser) == []

    browser.get(f"{base}/jobs/")
    Select(browser.find_element(By.NAME, "kind")).select_by_value("ingest")  # submits through static/js/app.js
    WebDriverWait(browser, 20).until(lambda d: "kind=ingest" in d.current_url)
    assert csp_violations(browser) == []

    for path, ready in (
        ("/admin/", "#content-main"),
        ("/admin/sources/document/", "#changelist"),
        ("/admin/sources/document/add/", "#document_form"),
        ("/admin/tasks/job/", "#changelist"),
    ):
        browser.get(f"{base}{path}")
        wait_for(browser, ready)
        assert csp_violations(browser) == [], path


def test_the_api_docs_render_with_no_policy_violation(browser: Any, live_server: Any, db: Any) -> None:
    watch_csp(browser)
    browser.get(f"{live_server.url}/api/docs/")
    wait_for(browser, ".swagger-ui .opblock", 60)  # Swagger UI rendered the operations from the schema
    assert csp_violations(browser) == []

    browser.get(f"{live_server.url}/api/redoc/")
    wait_for(browser, "[role=menuitem], .menu-content li", 60)  # Redoc rendered its menu
    # Redoc's "API docs by Redocly" credit is an image on its CDN: the policy keeps it (and any
    # other outside request) from loading; nothing else is refused.
    refused = [v for v in csp_violations(browser) if not v.startswith("img-src blocked https://cdn.redoc.ly/")]
    assert refused == []


def test_an_ask_refused_for_a_nul_byte_shows_its_message_in_place(
    browser: Any, live_server: Any, admin_user: Any
) -> None:
    """htmx shows nothing of a 400 by itself; the refusal of a NUL byte (reliability_site/
    nul_bytes.py) comes back as a fragment that static/js/app.js swaps into the result."""
    from core.models import Question

    watch_csp(browser)
    browser.get(f"{live_server.url}/login/")
    browser.find_element(By.NAME, "username").send_keys(admin_user.username)
    browser.find_element(By.NAME, "password").send_keys("password")
    browser.find_element(By.ID, "login-button").click()
    box = wait_for(browser, "#id_text")
    browser.execute_script("arguments[0].value = 'Where is the Eiffel\\u0000 Tower?';", box)
    browser.find_element(By.ID, "ask-button").click()
    error = wait_for(browser, "#result #request-error", seconds=10)
    assert "text must not contain NUL characters" in error.text
    assert browser.find_element(By.ID, "ask-form").is_displayed() and not Question.objects.exists()
    assert csp_violations(browser) == []
