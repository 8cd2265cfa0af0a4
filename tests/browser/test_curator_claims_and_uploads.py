"""A curator's paths that start in a form and end in a background job, in headless Chromium
against the real server and a real Celery worker: a new source created by its first upload
(and a malformed upload refused whole, the new source with it), and a claims run started from
the runs page whose claims then answer a question through multirag on the ask page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from sources.claim_loading import load_claims
from sources.models import Claim, Document, Source
from tests.browser.helpers import WAIT, log_in, screenshot
from tests.corpus import DEPARTURES_CSV, DEPARTURES_MAPPING

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]

FIELD_NOTES = (
    '{"title": "Stoker", "text": "Bram Stoker wrote the novel Dracula, published in 1897 in London."}\n'
    '{"title": "Eiffel", "text": "The Eiffel Tower stands on the Champ de Mars in Paris."}\n'
)


def _upload(driver: Any, base: str, *, name: str, path: Path) -> None:
    driver.get(f"{base}/admin/sources/source/upload/")
    driver.find_element(By.ID, "id_new_source").send_keys(name)
    Select(driver.find_element(By.ID, "id_new_source_kind")).select_by_value(Source.Kind.NEWS)
    driver.find_element(By.ID, "id_files").send_keys(str(path))
    driver.find_element(By.CSS_SELECTOR, "input[type=submit][value='Upload and ingest']").click()


def _wait_for_job(driver: Any) -> None:
    # htmx replaces the job panel every second: a read that lands between two swaps is retried.
    def ended(d: Any) -> str | None:
        state = d.find_element(By.ID, "job-status").get_attribute("data-state")
        return state if state in {"succeeded", "failed"} else None

    state = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,)).until(ended)
    assert state == "succeeded"


def test_a_curator_creates_a_source_with_its_first_upload_and_a_malformed_one_leaves_nothing(
    browser: Any, live_server: Any, seeded: Any, tmp_path: Path
) -> None:
    curator = seeded["user"]
    # Curators work in the admin: staff with the sources app's permissions, as create_demo_user makes them.
    curator.is_staff = True
    curator.save(update_fields=["is_staff"])
    curator.user_permissions.set(Permission.objects.filter(content_type__app_label="sources"))
    base = live_server.url
    log_in(browser, base, curator.username)

    # A malformed file (its second line is not JSON) is refused whole, with the line at fault,
    # and the new source it named is not created either.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(FIELD_NOTES.splitlines()[0] + "\n{not json\n", encoding="utf-8")
    _upload(browser, base, name="field-notes", path=broken)
    errors = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".errorlist")))
    assert "line 2" in errors.text
    assert not Source.objects.filter(name="field-notes").exists()

    notes = tmp_path / "notes.jsonl"
    notes.write_text(FIELD_NOTES, encoding="utf-8")
    _upload(browser, base, name="field-notes", path=notes)
    message = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert "Ingestion into field-notes started" in message.text
    message.find_element(By.PARTIAL_LINK_TEXT, "Job").click()
    _wait_for_job(browser)

    source = Source.objects.get(name="field-notes")
    assert source.kind == Source.Kind.NEWS
    assert set(Document.objects.filter(source=source).values_list("title", flat=True)) == {"Stoker", "Eiffel"}
    browser.get(f"{base}/sources/{source.pk}/")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#document-table tbody tr")) == 2
    # The admin's history records the source's creation by the upload.
    browser.get(f"{base}/admin/sources/source/{source.pk}/history/")
    assert "Added" in browser.find_element(By.ID, "change-history").text


ROWS = DEPARTURES_CSV + (  # a second flight: four (flight, attribute) items in all
    b"airline,DL-20-ATL-LAX,8:05 a.m.,10:15 a.m.\n"
    b"airport,DL-20-ATL-LAX,08:05,10:15 a.m.\n"
    b"rumours,DL-20-ATL-LAX,6:00 p.m.,10:15 a.m.\n"
)


def test_a_claims_run_starts_from_the_runs_page_and_multirag_answers_from_the_claims(
    browser: Any, live_server: Any, seeded: Any
) -> None:
    load_claims([("flights.csv", ROWS)], DEPARTURES_MAPPING)
    base = live_server.url
    log_in(browser, base, seeded["user"].username)

    browser.get(f"{base}/runs/?start=1")
    section = browser.find_element(By.ID, "start-claims-run")
    if section.get_attribute("open") is None:
        section.find_element(By.TAG_NAME, "summary").click()
    assert f"the {Claim.objects.count()} claims loaded" in section.text
    browser.find_element(By.ID, "start-claims-run-button").click()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "job-status")))
    _wait_for_job(browser)
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.ID, "claim-resolutions")))
    assert "Claim-level estimation" in browser.find_element(By.ID, "claims-note").text
    scores = browser.find_element(By.ID, "score-table").text
    assert {"airline", "airport", "tracker", "rumours"} <= set(scores.split())
    resolved = browser.find_element(By.ID, "claim-resolutions").text
    assert "4 items resolved" in resolved
    screenshot(browser, "claims_run")
    # The run wrote the sources' reliabilities: the rumour mill sits below the three that agree.
    rumours = Source.objects.get(name="rumours").reliability
    assert rumours is not None
    assert all(
        reliability is not None and rumours < reliability
        for reliability in Source.objects.filter(name__in=["airline", "airport", "tracker"]).values_list(
            "reliability", flat=True
        )
    )

    browser.get(f"{base}/")
    strategy = Select(browser.find_element(By.ID, "id_strategy"))
    assert "multirag" in {option.get_attribute("value") for option in strategy.options}
    browser.find_element(By.ID, "id_text").send_keys("When did flight UA-10-SFO-JFK actually depart?")
    strategy.select_by_value("multirag")
    browser.find_element(By.ID, "ask-button").click()
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_element(By.ID, "question-panel").get_attribute("data-finished") == "true"
    )
    answer = browser.find_element(By.ID, "answer").text
    assert any(value in answer for value in ("7:10 a.m.", "07:10", "7:10 AM")), answer
    assert "9:45" not in answer
    screenshot(browser, "multirag_answer")
