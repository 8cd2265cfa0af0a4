"""Giving feedback on an answer in headless Chromium against the real server and a real Celery
worker: ask, call the answer wrong, see the thanks state, give the right answer, reload: the
state is still there (it was stored, and the address is the question's permalink)."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.models import AnswerFeedback
from tests.browser.helpers import WAIT, csp_violations, log_in, screenshot, watch_csp

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]
MARKED_WRONG = "Marked as wrong; a curator will review it. If you know the right answer, add it below."
CORRECTION_THANKS = "Thanks — a curator will review your correction."


def pressed(driver: Any, element_id: str) -> str | None:
    value: str | None = driver.find_element(By.ID, element_id).get_attribute("aria-pressed")
    return value


def status(driver: Any, question: int) -> str:
    text: str = driver.find_element(By.ID, f"feedback-status-{question}").text
    return text


def test_an_analyst_calls_an_answer_wrong_and_the_thanks_state_survives_a_reload(
    browser: Any, live_server: Any, seeded: Any, analyst: Any
) -> None:
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)
    browser.find_element(By.ID, "id_text").send_keys("In which city is the Eiffel Tower located?")
    browser.find_element(By.ID, "ask-button").click()
    panel = WebDriverWait(browser, WAIT).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
    )
    question_id = panel.get_attribute("data-question")
    assert question_id is not None, "the panel names its question"
    question = int(question_id)
    wrong_id = f"feedback-wrong-{question}"
    wrong = WebDriverWait(browser, 30).until(ec.element_to_be_clickable((By.ID, wrong_id)))
    assert pressed(browser, wrong_id) == "false" and status(browser, question) == ""
    # htmx has taken the swapped-in form over (it keeps its state on the element).
    WebDriverWait(browser, 10).until(
        lambda d: d.execute_script("return !!arguments[0].form['htmx-internal-data']", wrong)
    )

    # Keyboard only: focus the button and press Enter.
    browser.execute_script("arguments[0].focus()", wrong)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    WebDriverWait(browser, 30).until(lambda d: status(d, question) == MARKED_WRONG)
    assert pressed(browser, wrong_id) == "true" and pressed(browser, f"feedback-right-{question}") == "false"
    assert browser.switch_to.active_element.get_attribute("id") == wrong_id  # focus stays on the button
    feedback = AnswerFeedback.objects.get(question_id=question)
    assert (feedback.kind, feedback.status, feedback.user) == ("answer_wrong", "pending", analyst)

    # Now it asks for the right answer; sending it updates the same feedback.
    field = browser.find_element(By.ID, f"feedback-corrected-{question}")
    field.send_keys("Champ de Mars, Paris")
    browser.find_element(By.ID, f"feedback-send-{question}").click()
    WebDriverWait(browser, 30).until(
        lambda d: AnswerFeedback.objects.get(question_id=question).corrected_answer == "Champ de Mars, Paris"
    )
    assert AnswerFeedback.objects.filter(question_id=question).count() == 1
    screenshot(browser, "feedback")

    # The answer pushed the question's permalink: a reload shows the same state, from the database.
    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith(f"/questions/{question}/"))
    browser.refresh()
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.ID, wrong_id)))
    assert status(browser, question) == CORRECTION_THANKS
    assert pressed(browser, wrong_id) == "true"
    assert (
        browser.find_element(By.ID, f"feedback-corrected-{question}").get_attribute("value") == "Champ de Mars, Paris"
    )
    assert csp_violations(browser) == []
