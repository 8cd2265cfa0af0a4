"""The demo's flights in headless Chromium against the real server and worker (issue 37): the
claim run that three mirrored sites would turn upside down says it is unsettled, a curator
answers its checks with one click each, and the run page then names the copiers and ranks the
two accurate trackers above them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.bench.paths import default_data_dir
from core.bench.truth import load_flights_gold
from core.engine.claims.mapping import ClaimMapping
from core.models import EstimationRun
from core.services.estimation import start_claim_run
from sources.claim_loading import load_claims
from sources.models import Source
from tests.browser.helpers import WAIT, log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]

DEMO = Path(__file__).resolve().parents[2] / "sources" / "demo_data"
COPIERS = ("flightview", "panynj", "foxbusiness")
TRACKERS = ("flights", "flightstats")


def _wait_until_run_ends(driver: Any, base: str, run_id: int) -> None:
    def ended(_: Any) -> bool:
        run = EstimationRun.objects.select_related("job").get(pk=run_id)
        return run.job is not None and run.job.finished

    WebDriverWait(driver, WAIT).until(ended)
    driver.get(f"{base}/runs/{run_id}/")
    WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "score-table")))


@pytest.mark.skipif(
    not (default_data_dir() / "flights" / "clean.csv").is_file(), reason="the shared Flights gold is not here"
)
def test_a_curator_settles_the_demo_flights_with_three_checks_and_the_run_names_the_copiers(
    browser: Any, live_server: Any, seeded: Any
) -> None:
    mapping = ClaimMapping.from_json(json.loads((DEMO / "flights-mapping.json").read_text()))
    load_claims([("flights.csv", (DEMO / "flights.csv").read_bytes())], mapping)
    gold = load_flights_gold(default_data_dir())
    run = start_claim_run(estimator="accucopy")
    base = live_server.url
    log_in(browser, base, seeded["user"].username)
    _wait_until_run_ends(browser, base, run.pk)
    warning = browser.find_element(By.ID, "run-identification")
    assert "Agreement alone does not settle this estimate" in warning.text
    assert all(name in warning.text for name in COPIERS)  # the side the agreement alone would follow
    screenshot(browser, "claims_run_unsettled")

    browser.find_element(By.ID, "run-checks-link").click()
    for _ in range(3):  # one check at a time, each from the proposals of the latest estimate
        browser.get(f"{base}/runs/{run.pk}/checks/")
        check = WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, "section.check")))
        subject, attribute = check.find_element(By.TAG_NAME, "h2").text.split(": ", 1)
        right = gold[(subject, attribute)]
        buttons = [
            form
            for form in check.find_elements(By.CSS_SELECTOR, ".check-answers form")
            if form.find_element(By.NAME, "answer").get_attribute("value") == right
        ]
        assert buttons, f"the right value {right} of {subject} / {attribute} is not offered"
        before = EstimationRun.objects.get(pk=run.pk).job_id
        buttons[0].find_element(By.TAG_NAME, "button").click()
        # The check is recorded and the run re-estimated under a new job: wait for that job
        # (the checks page itself is on screen before and after the click).

        def re_estimating(_: object, job: int | None = before) -> bool:
            return EstimationRun.objects.get(pk=run.pk).job_id != job

        WebDriverWait(browser, WAIT).until(re_estimating)
        _wait_until_run_ends(browser, base, run.pk)

    assert not browser.find_elements(By.CSS_SELECTOR, "#run-identification.warning")
    copying = browser.find_element(By.ID, "run-copying").text
    assert all(name in copying for name in COPIERS)
    assert not any(re.search(rf"\b{name}\b", copying) for name in TRACKERS)
    reliability: dict[str, float] = {}
    for name, estimate in Source.objects.filter(name__in=(*COPIERS, *TRACKERS)).values_list("name", "reliability"):
        assert estimate is not None, f"the run estimated {name}"
        reliability[name] = estimate
    assert min(reliability[n] for n in TRACKERS) > max(reliability[n] for n in COPIERS)
    screenshot(browser, "claims_run_settled")
