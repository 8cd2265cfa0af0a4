"""A curator in the admin and on the pages, in headless Chromium against the real server: the
upload form's source chooser grouped by kind, a bulk deactivation that leaves an entry in each
source's history, and a form's address opened by hand answered by a page that says what it is for."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from sources.models import Source
from tests.browser.helpers import log_in
from tests.factories import CuratorFactory, QuestionFactory, SourceFactory

pytestmark = [pytest.mark.browser]


def _admin_curator() -> Any:
    """A curator as create_demo_user makes one: staff, with the sources app's permissions."""
    curator = CuratorFactory(username="carol", is_staff=True)
    curator.user_permissions.set(Permission.objects.filter(content_type__app_label="sources"))
    return curator


def test_the_upload_form_groups_the_sources_by_kind(browser: Any, live_server: Any, db: Any) -> None:
    SourceFactory(name="almanac", kind=Source.Kind.REFERENCE)
    SourceFactory(name="gazette", kind=Source.Kind.NEWS)
    SourceFactory(name="tribune", kind=Source.Kind.NEWS, active=False)
    log_in(browser, live_server.url, _admin_curator().username)
    browser.get(f"{live_server.url}/admin/sources/source/upload/")
    chooser = browser.find_element(By.ID, "id_source")
    groups = {
        group.get_attribute("label"): [o.text for o in group.find_elements(By.TAG_NAME, "option")]
        for group in chooser.find_elements(By.TAG_NAME, "optgroup")
    }
    news, reference = Source.Kind.NEWS.label, Source.Kind.REFERENCE.label
    assert groups == {news: ["gazette", "tribune (inactive)"], reference: ["almanac"]}


def test_a_bulk_deactivation_leaves_an_entry_in_each_source_s_history(browser: Any, live_server: Any, db: Any) -> None:
    rumours, blog = SourceFactory(name="rumour-mill"), SourceFactory(name="echo-blog")
    kept = SourceFactory(name="almanac")
    log_in(browser, live_server.url, _admin_curator().username)
    browser.get(f"{live_server.url}/admin/sources/source/")
    for source in (rumours, blog):
        browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{source.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("deactivate")
    browser.find_element(By.CSS_SELECTOR, "button[name='index']").click()
    # The action reloads the list: wait for the new page's message (a loaded machine is slow).
    message = WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert "2" in message.text
    assert set(Source.objects.filter(active=False).values_list("name", flat=True)) == {"rumour-mill", "echo-blog"}

    for source in (rumours, blog):
        browser.get(f"{live_server.url}/admin/sources/source/{source.pk}/history/")
        history = browser.find_element(By.ID, "change-history").text
        assert "carol" in history and "Active" in history
    browser.get(f"{live_server.url}/admin/sources/source/{kept.pk}/history/")
    assert "Active" not in browser.find_element(By.ID, "content").text


def test_a_form_address_opened_by_hand_says_what_it_is_for(browser: Any, live_server: Any, db: Any) -> None:
    question = QuestionFactory(answered=True)
    log_in(browser, live_server.url, _admin_curator().username)
    browser.get(f"{live_server.url}/questions/{question.pk}/feedback/")
    page = browser.find_element(By.ID, "error-405")
    assert "This address is not a page to open" in page.text
    assert "takes a form's submission" in page.text and "Nothing was changed" in page.text
    page.find_element(By.LINK_TEXT, "Ask a question").click()
    assert browser.find_element(By.ID, "ask-form").is_displayed()
