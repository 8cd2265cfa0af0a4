"""Choosing the sources on the ask page, in headless Chromium against the real server and a
real Celery worker: a source left out is never asked, the answer says it was excluded, the
job kept each asked source's progress, and the Sources section works from the keyboard and
on a phone."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from core.models import Question
from sources.models import Source
from tests.browser.helpers import (
    ARTIFACTS,
    FACTS,
    PHONE,
    WAIT,
    assert_no_sideways_scroll,
    axe_violations,
    csp_violations,
    log_in,
    screenshot,
    set_viewport,
    watch_csp,
)

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]
LEFT_OUT = "rumour-mill"


def test_a_source_left_out_is_not_asked_and_is_listed_as_excluded(browser: Any, live_server: Any, seeded: Any) -> None:
    watch_csp(browser)
    log_in(browser, live_server.url, seeded["user"].username)
    left_out = Source.objects.get(name=LEFT_OUT)
    browser.find_element(By.ID, "id_text").send_keys("Who wrote the novel Dracula?")
    Select(browser.find_element(By.ID, "id_strategy")).select_by_value("ra-rag")
    kappa = browser.find_element(By.ID, "id_kappa")
    kappa.clear()
    kappa.send_keys("5")  # every source that may be asked is asked

    # The Sources section, from the keyboard: open it, pick "every source except", tick one.
    section = browser.find_element(By.ID, "sources-section")
    assert section.get_attribute("open") is None
    summary = section.find_element(By.TAG_NAME, "summary")
    summary.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: section.get_attribute("open") is not None)
    browser.find_element(By.ID, "sources-mode-exclude").send_keys(Keys.SPACE)
    assert browser.find_element(By.ID, "sources-mode-exclude").is_selected()
    box = browser.find_element(By.CSS_SELECTOR, f'input[name="sources"][value="{left_out.pk}"]')
    box.send_keys(Keys.SPACE)
    assert box.is_selected()
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".source-check-name")]
    assert sorted(names) == sorted(FACTS)
    screenshot(browser, "ask_sources_form")

    browser.find_element(By.ID, "ask-button").click()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "question-panel")))
    WebDriverWait(browser, WAIT).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#vote-table tr.vote")))
    rows = browser.find_elements(By.CSS_SELECTOR, "#vote-table tr.vote")
    voters = {row.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").text for row in rows}
    assert voters == set(FACTS) - {LEFT_OUT}
    assert browser.find_element(By.ID, "excluded-sources").text == LEFT_OUT
    assert "but those excluded" in browser.find_element(By.ID, "source-selection").text
    assert csp_violations(browser) == []
    screenshot(browser, "ask_sources_answer")

    # The permalink shows the same after a reload, and the job kept every asked source's progress.
    question = Question.objects.select_related("job").get()
    browser.get(f"{live_server.url}/questions/{question.pk}/")
    assert browser.find_element(By.ID, "excluded-sources").text == LEFT_OUT
    assert question.job is not None
    labels = {p["label"]: p["state"] for p in question.job.parts.values()}
    assert set(labels) == set(FACTS) - {LEFT_OUT}
    assert set(labels.values()) <= {"answered", "abstained", "filtered"}


def test_the_sources_section_fits_a_phone_and_passes_the_accessibility_check(
    browser: Any, live_server: Any, seeded: Any
) -> None:
    log_in(browser, live_server.url, seeded["user"].username)
    set_viewport(browser, PHONE, mobile=True)
    browser.get(live_server.url + "/")
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "sources-section")))
    browser.find_element(By.CSS_SELECTOR, "#sources-section summary").click()
    box = browser.find_element(By.CSS_SELECTOR, 'input[name="sources"]')
    assert box.is_displayed()
    assert_no_sideways_scroll(browser, "ask with the Sources section open", PHONE[0])
    assert axe_violations(browser) == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "ask_sources_phone.png"))  # at the phone's width
