"""An analyst's and a curator's path through the dashboard, in headless Chromium against the
real server and a real Celery worker. Screenshots land in test-artifacts/browser/."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.helpers import WAIT, csp_violations, log_in, screenshot, watch_csp

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]


def start_run(driver: Any, base: str, *, tau: str) -> None:
    driver.get(f"{base}/runs/")
    driver.find_element(By.CSS_SELECTOR, "#start-run summary").click()
    Select(driver.find_element(By.ID, "id_query_set")).select_by_visible_text(
        "demo (3 queries, 3 with reference answers)"
    )
    Select(driver.find_element(By.ID, "id_sources")).select_by_value("all")  # sources are chosen explicitly
    field = driver.find_element(By.NAME, "tau")
    field.clear()
    field.send_keys(tau)
    driver.find_element(By.ID, "start-run-button").click()
    WebDriverWait(driver, 20).until(ec.presence_of_element_located((By.ID, "job-status")))
    WebDriverWait(driver, WAIT).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#job-status .percent"), "100%")
    )
    WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "agreement-matrix")))


def test_asking_a_question_fills_the_vote_table_without_a_reload(browser: Any, live_server: Any, seeded: Any) -> None:
    watch_csp(browser)
    log_in(browser, live_server.url, seeded["user"].username)
    browser.execute_script("window.__sameDocument = true")
    browser.find_element(By.ID, "id_text").send_keys("Who wrote the novel Dracula?")
    Select(browser.find_element(By.ID, "id_strategy")).select_by_value("ra-rag")
    kappa = browser.find_element(By.ID, "id_kappa")
    kappa.clear()
    kappa.send_keys("5")
    browser.find_element(By.ID, "ask-button").click()

    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "question-panel")))
    WebDriverWait(browser, WAIT).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#vote-table tr.vote")))
    assert browser.execute_script("return window.__sameDocument") is True  # htmx swapped, no reload
    rows = browser.find_elements(By.CSS_SELECTOR, "#vote-table tr.vote")
    assert len(rows) >= 2
    names = {row.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").text for row in rows}
    assert names <= {"encyclopedia", "almanac", "gazette", "rumour-mill", "echo-blog"}
    answer = browser.find_element(By.ID, "answer").text
    assert answer
    panel = browser.find_element(By.ID, "question-panel")
    assert panel.get_attribute("data-finished") == "true"
    browser.find_element(By.CSS_SELECTOR, "#vote-table details summary").click()  # passages expand
    assert csp_violations(browser) == []  # htmx and the swapped-in answer need no inline script or style
    screenshot(browser, "ask")

    browser.get(f"{live_server.url}/questions/")
    assert "Who wrote the novel Dracula?" in browser.find_element(By.ID, "history-table").text
    screenshot(browser, "history")


def test_a_curator_runs_an_estimation_and_reads_the_results(browser: Any, live_server: Any, seeded: Any) -> None:
    base = live_server.url
    log_in(browser, base, seeded["user"].username)
    start_run(browser, base, tau="0.1")
    # A second run (another alignment threshold) so the page can show what changed.
    start_run(browser, base, tau="0.05")
    assert "Changes against" in browser.find_element(By.ID, "run-result").text
    # The job may show 100% a moment before it records success; the panel polls until it does.
    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.ID, "job-status").get_attribute("data-state") == "succeeded"
    )
    scores = browser.find_element(By.ID, "score-table").text
    assert "encyclopedia" in scores and "rumour-mill" in scores
    cells = browser.find_elements(By.CSS_SELECTOR, "#agreement-matrix td.cell")
    assert len(cells) == 3 * 5
    screenshot(browser, "run_detail")

    browser.get(f"{base}/runs/")
    screenshot(browser, "runs")

    browser.get(f"{base}/conflicts/")
    graph = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "conflict-graph")))
    assert len(graph.find_elements(By.CSS_SELECTOR, "circle")) == 5
    screenshot(browser, "conflicts")

    browser.get(f"{base}/sources/")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#source-table svg.sparkline")) == 5
    screenshot(browser, "sources")
    browser.find_element(By.LINK_TEXT, "rumour-mill").click()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "reliability-chart")))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#document-table tbody tr")) == 3
    screenshot(browser, "source_detail")

    browser.get(f"{base}/jobs/")
    screenshot(browser, "jobs")
