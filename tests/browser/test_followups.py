"""Follow-up questions in headless Chromium against the real server and a real Celery worker,
on a desktop (1366 px) and on a phone (390 px): ask, ask a follow-up under the answer, and
read the conversation (the earlier turn above, with its answer and link) and the question as
rewritten to stand alone; the follow-up's own address keeps all of it after a reload, and
the conversation goes on from there."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.models import Question
from tests.browser.helpers import (
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
QUESTION = "Who wrote the novel Dracula?"
FOLLOW_UP = "When was it published?"
STANDALONE = "When was Dracula published?"
DESKTOP = (1366, 900)


def answered_panel(driver: Any, *, other_than: int | None = None) -> int:
    """Wait for an answered question panel (not ``other_than``'s); its question's id."""
    finished = "#question-panel[data-finished='true']"
    if other_than is not None:
        finished += f":not([data-question='{other_than}'])"
    panel = WebDriverWait(driver, WAIT).until(ec.presence_of_element_located((By.CSS_SELECTOR, finished)))
    question = panel.get_attribute("data-question")
    assert question is not None, "the panel names its question"
    return int(question)


def check_conversation(driver: Any, base: str, first: int) -> None:
    turns = driver.find_elements(By.CSS_SELECTOR, "#conversation li.turn")
    assert len(turns) == 1
    turn = turns[0]
    assert QUESTION in turn.find_element(By.CSS_SELECTOR, ".turn-question").text
    assert turn.find_element(By.CSS_SELECTOR, ".turn-answer").text == "Answer: Bram Stoker"
    link = turn.find_element(By.CSS_SELECTOR, ".turn-question a")
    assert link.get_attribute("href") == f"{base}/questions/{first}/"
    assert driver.find_element(By.CSS_SELECTOR, "#question-panel .question-text").text == FOLLOW_UP
    assert driver.find_element(By.ID, "asked-as").text == f"Asked as: {STANDALONE}"
    # The earlier turn is shown above the follow-up's own panel.
    above = driver.execute_script(
        "return document.getElementById('conversation').getBoundingClientRect().top"
        " < document.getElementById('question-panel').getBoundingClientRect().top"
    )
    assert above is True


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_a_follow_up_shows_the_conversation_and_the_rewritten_question(
    browser: Any, live_server: Any, seeded: Any, analyst: Any, viewport: str
) -> None:
    size = DESKTOP if viewport == "desktop" else PHONE
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)
    set_viewport(browser, size, mobile=viewport == "phone")
    browser.execute_script("window.__sameDocument = true")

    box = browser.find_element(By.ID, "id_text")
    box.send_keys(QUESTION, Keys.ENTER)
    first = answered_panel(browser)
    assert browser.find_element(By.ID, "answer-text").text == "Bram Stoker"

    # Under the answer: the follow-up box, labelled, reachable and usable from the keyboard.
    follow_box = browser.find_element(By.ID, "follow-up-text")
    label = browser.find_element(By.CSS_SELECTOR, "label[for='follow-up-text']")
    assert label.text.lower() == "ask a follow-up" and follow_box.is_displayed()
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", follow_box)
    follow_box.click()
    follow_box.send_keys(FOLLOW_UP)
    follow_box.send_keys(Keys.TAB)  # to the button
    assert browser.switch_to.active_element == browser.find_element(By.ID, "follow-up-button")
    browser.switch_to.active_element.send_keys(Keys.ENTER)

    second = answered_panel(browser, other_than=first)
    assert browser.execute_script("return window.__sameDocument") is True  # htmx swapped, no reload
    WebDriverWait(browser, 20).until(lambda d: d.current_url == f"{base}/questions/{second}/")
    follow_up = Question.objects.get(pk=second)
    assert (follow_up.follows_id, follow_up.text, follow_up.standalone) == (first, FOLLOW_UP, STANDALONE)
    assert follow_up.answer == "1897"  # retrieval used the standalone question
    assert browser.find_element(By.ID, "answer-text").text == "1897"
    check_conversation(browser, base, first)
    assert browser.find_elements(By.ID, "follow-up-form")  # the conversation can go on
    assert csp_violations(browser) == []
    assert axe_violations(browser) == []
    if viewport == "phone":
        assert_no_sideways_scroll(browser, "a follow-up with its conversation", PHONE[0])
    screenshot(browser, f"follow_up_{viewport}")
    set_viewport(browser, size, mobile=viewport == "phone")  # the screenshot took its own width

    # Its address, reloaded: the same conversation and rewritten question, from the server.
    browser.refresh()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "conversation")))
    check_conversation(browser, base, first)
    assert browser.find_element(By.ID, "answer-text").text == "1897"
    assert axe_violations(browser) == []
    if viewport == "phone":
        assert_no_sideways_scroll(browser, "a follow-up's page", PHONE[0])

    # From the follow-up's own page, the conversation goes on: the page becomes the third turn's.
    browser.execute_script("window.__sameDocument = true")
    follow_box = browser.find_element(By.ID, "follow-up-text")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", follow_box)
    follow_box.send_keys("Who wrote it?", Keys.ENTER)  # Enter sends it on a question's page too
    third = answered_panel(browser, other_than=second)
    assert browser.execute_script("return window.__sameDocument") is True
    WebDriverWait(browser, 20).until(lambda d: d.current_url == f"{base}/questions/{third}/")
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Question #{third}"
    assert browser.title.startswith(f"Question #{third} ")  # the tab says so too
    assert not browser.find_elements(By.CSS_SELECTOR, "#conversation-host > title")  # htmx took it out of the page
    turns = browser.find_elements(By.CSS_SELECTOR, "#conversation li.turn")
    assert [t.find_element(By.CSS_SELECTOR, ".turn-answer").text for t in turns] == [
        "Answer: Bram Stoker",
        "Answer: 1897",
    ]
    assert turns[1].find_element(By.CSS_SELECTOR, ".turn-asked-as").text == f"Asked as: {STANDALONE}"
    assert browser.find_element(By.ID, "asked-as").text == "Asked as: Who wrote Dracula?"
    assert browser.find_element(By.ID, "answer-text").text == "Bram Stoker"
    assert csp_violations(browser) == []
    assert axe_violations(browser) == []
