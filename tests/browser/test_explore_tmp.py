from __future__ import annotations

import time
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.test_dashboard_flow import WAIT, log_in

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]


def test_explore(browser: Any, live_server: Any, seeded: Any, analyst: Any) -> None:
    base = live_server.url
    log_in(browser, base, analyst.username)
    print("history after login", browser.execute_script("return history.length"), browser.current_url)
    browser.execute_script("window.__sameDocument = true")
    box = browser.find_element(By.ID, "id_text")
    box.send_keys("Who wrote the novel Dracula?")
    box.send_keys(Keys.ENTER)
    panel = WebDriverWait(browser, WAIT).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
    )
    q = panel.get_attribute("data-question")
    time.sleep(1)
    print("url", browser.current_url, "q", q, browser.execute_script("return window.__sameDocument"))
    print("history", browser.execute_script("return history.length"))
    print("answer", browser.find_element(By.ID, "answer").text)
    print(browser.find_element(By.ID, "question-panel").get_attribute("innerHTML")[:3000])
    browser.back()
    for i in range(6):
        time.sleep(1)
        print(i, browser.current_url, browser.execute_script("return history.length"),
              [p.get_attribute("data-finished") for p in browser.find_elements(By.ID, "question-panel")],
              browser.execute_script("return window.__sameDocument"))
    n = browser.execute_script("return document.querySelectorAll('script[src*=\"ask.js\"]').length")
    print("ask.js scripts", n)
    browser.forward()
    time.sleep(2)
    print("fwd", browser.current_url, browser.execute_script("return history.length"))
