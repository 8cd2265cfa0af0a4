"""Inline citations preview their passage on hover and on keyboard focus (Tab, not a scripted
focus), in headless Chromium against the real server and worker, on a desktop and on a phone:
the preview appears for the citation reached, goes when the focus moves on, and stays on
the screen."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.helpers import PHONE, WAIT, log_in, set_viewport

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]
QUESTION = "Who wrote the novel Dracula?"
DESKTOP = (1366, 900)
_ON_SCREEN = """
const r = arguments[0].getBoundingClientRect();
return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;
"""


def tab_to(driver: Any, css: str, limit: int = 40) -> Any:
    """Press Tab until the focus is on an element matching ``css``; that element."""
    for _ in range(limit):
        active = driver.switch_to.active_element
        if driver.execute_script("return arguments[0].matches(arguments[1])", active, css):
            return active
        active.send_keys(Keys.TAB)
    raise AssertionError(f"Tab never reached {css}")


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_a_citation_previews_its_passage_on_keyboard_focus_and_on_hover(
    browser: Any, live_server: Any, seeded: Any, analyst: Any, viewport: str
) -> None:
    log_in(browser, live_server.url, analyst.username)
    set_viewport(browser, DESKTOP if viewport == "desktop" else PHONE, mobile=viewport == "phone")
    browser.find_element(By.ID, "id_text").send_keys(QUESTION, Keys.ENTER)
    WebDriverWait(browser, WAIT).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
    )
    refs = browser.find_elements(By.CSS_SELECTOR, "#answer a.cite-ref")
    assert len(refs) >= 2
    previews = [ref.find_element(By.CSS_SELECTOR, ".cite-preview") for ref in refs]
    assert not any(p.is_displayed() for p in previews)

    # From the question's heading, Tab goes to the first citation: its preview shows.
    heading = browser.find_element(By.CSS_SELECTOR, "#question-panel .question-text")
    ActionChains(browser).move_to_element(heading).click().perform()
    first = tab_to(browser, "#answer a.cite-ref")
    assert first == refs[0]
    WebDriverWait(browser, 5).until(lambda d: previews[0].is_displayed())
    assert "Bram Stoker" in previews[0].text
    assert previews[0].get_attribute("role") == "tooltip"
    assert refs[0].get_attribute("aria-describedby") == previews[0].get_attribute("id")
    assert browser.execute_script(_ON_SCREEN, previews[0]), "the preview runs off the screen"

    # Tab again: the next citation's preview replaces it.
    refs[0].send_keys(Keys.TAB)
    assert browser.switch_to.active_element == refs[1]
    WebDriverWait(browser, 5).until(lambda d: previews[1].is_displayed() and not previews[0].is_displayed())
    assert browser.execute_script(_ON_SCREEN, previews[1])

    # Hover (the focus elsewhere): the last citation previews; moving away hides it.
    browser.execute_script("document.activeElement.blur()")
    ActionChains(browser).move_to_element(refs[-1]).perform()
    WebDriverWait(browser, 5).until(lambda d: previews[-1].is_displayed())
    assert browser.execute_script(_ON_SCREEN, previews[-1])
    ActionChains(browser).move_to_element(heading).perform()
    WebDriverWait(browser, 5).until(lambda d: not previews[-1].is_displayed())
