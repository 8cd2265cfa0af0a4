"""A first-time analyst's path in headless Chromium against the real server and a real Celery
worker: ask, read the inline citations, open the cited passage (its supporting sentence marked)
and the document it comes from; the answer's own address (pushed when it arrives, kept by a
reload, Back and Forward); the copy buttons from the keyboard; the votes and scores CSV
downloads, fetched in the page with the session's cookie."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.models import Question
from sources.models import Chunk, Source
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
from tests.factories import EstimationRunFactory, QuestionFactory, ReliabilityScoreFactory

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]
QUESTION = "Who wrote the novel Dracula?"
VOTES_HEADER = [
    "rank",
    "source_id",
    "source",
    "reliability",
    "response",
    "raw_response",
    "filtered",
    "align_score",
    "cluster",
    "weight",
    "passages",
]
SCORES_HEADER = [
    "source_id",
    "source",
    "reliability",
    "low",
    "high",
    "weight",
    "answers",
    "agreements",
    "gold_answers",
    "gold_agreements",
]
# A download fetched inside the page: same origin, so the session cookie goes with it.
_FETCH = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "same-origin"}).then(
  async (r) => done({status: r.status, type: r.headers.get("content-type"),
                     disposition: r.headers.get("content-disposition"), text: await r.text()}),
  (e) => done({status: 0, error: String(e)}));
"""


def ask(driver: Any, text: str) -> int:
    """Type the question and press Enter (it sends); wait for the answer; its question's id."""
    driver.execute_script("window.__sameDocument = true")
    box = driver.find_element(By.ID, "id_text")
    assert driver.switch_to.active_element == box  # the box has the focus on arrival
    box.send_keys(text)
    box.send_keys(Keys.ENTER)
    panel = WebDriverWait(driver, WAIT).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
    )
    question = panel.get_attribute("data-question")
    assert question is not None, "the panel names its question"
    return int(question)


def download(driver: Any, href: str) -> dict[str, Any]:
    driver.set_script_timeout(30)
    got = driver.execute_async_script(_FETCH, href)
    assert got["status"] == 200, got
    return dict(got)


def vote_rows(driver: Any) -> list[tuple[str, ...]]:
    """(source, response, weight) of each row of the vote table, in order."""
    return [
        tuple(row.find_element(By.CSS_SELECTOR, f"td:nth-child({i})").text for i in (2, 4, 8))
        for row in driver.find_elements(By.CSS_SELECTOR, "#vote-table tr.vote")
    ]


def test_an_analyst_checks_a_citation_against_its_passage_and_its_document(
    browser: Any, live_server: Any, seeded: Any, analyst: Any
) -> None:
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)
    question = ask(browser, QUESTION)
    assert browser.execute_script("return window.__sameDocument") is True  # htmx swapped, no reload
    assert browser.find_element(By.ID, "answer-text").text == "Bram Stoker"  # three reliable sources agree

    # Inline citations follow the answer; each is a passage that supports it: its sentence is marked.
    refs = browser.find_elements(By.CSS_SELECTOR, "#answer a.cite-ref")
    assert refs and [r.text for r in refs] == [f"[{n}]" for n in range(1, len(refs) + 1)]
    items = browser.find_elements(By.CSS_SELECTOR, "#citations li.citation")
    assert len(items) == len(refs)
    for item in items:
        mark = item.find_element(By.CSS_SELECTOR, "blockquote.passage mark")
        assert "Bram Stoker" in mark.get_attribute("textContent"), item.get_attribute("textContent")
    first = items[0]
    assert first.get_attribute("id") == f"cite-{question}-1"
    passage = first.find_element(By.CSS_SELECTOR, "blockquote.passage")
    assert not passage.is_displayed()  # closed until asked for

    # Focusing [1] (by keyboard, or hovering it) previews the cited sentence and its source in place.
    preview = refs[0].find_element(By.CSS_SELECTOR, ".cite-preview")
    assert not preview.is_displayed()
    browser.execute_script("arguments[0].focus()", refs[0])
    WebDriverWait(browser, 5).until(lambda d: preview.is_displayed())
    assert "Bram Stoker" in preview.text and refs[0].get_attribute("aria-describedby") == preview.get_attribute("id")

    refs[0].click()  # [1] opens its passage, with the supporting sentence highlighted
    WebDriverWait(browser, 5).until(lambda d: passage.is_displayed())
    assert first.find_element(By.TAG_NAME, "details").get_attribute("open") is not None
    mark = first.find_element(By.CSS_SELECTOR, "blockquote.passage mark")
    assert mark.is_displayed()
    sentence = mark.text
    assert sentence == "The novel Dracula was written by Bram Stoker and published in 1897."
    assert browser.current_url.endswith(f"/questions/{question}/#cite-{question}-1")
    source_name = first.find_element(By.CSS_SELECTOR, "summary .muted").text.removeprefix("· ")
    title = first.find_element(By.TAG_NAME, "summary").text
    assert csp_violations(browser) == []
    assert axe_violations(browser) == []  # the live panel, with a citation open
    screenshot(browser, "ask_citation_open")

    # Its link opens the document page: the whole document, the cited chunk marked.
    link = first.find_element(By.LINK_TEXT, "Open the document")
    href = link.get_attribute("href")
    link.click()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "document")))
    assert browser.current_url == href and "/documents/" in href and "?chunk=" in href
    chunk = Chunk.objects.select_related("document", "source").get(pk=int(href.split("?chunk=")[1].split("#")[0]))
    assert chunk.source.name == source_name and chunk.document.title in title
    assert browser.find_element(By.CSS_SELECTOR, "#document h1").text == chunk.document.title
    cited = browser.find_element(By.CSS_SELECTOR, f"mark.cited-passage#chunk-{chunk.pk}")
    assert cited.is_displayed() and cited.text == chunk.text and sentence in cited.text
    assert chunk.document.text in browser.find_element(By.CSS_SELECTOR, "#document .document-text").text
    assert csp_violations(browser) == []
    assert axe_violations(browser) == []
    screenshot(browser, "document_cited")

    # From there, the source's documents, searched by full text (stemmed: "writer" finds "written").
    browser.find_element(By.PARTIAL_LINK_TEXT, f"Documents of {source_name}").click()
    search = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.NAME, "q")))
    search.send_keys("novel written", Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: "q=novel" in d.current_url)
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#document-table tbody a")]
    assert titles == ["Dracula"]

    # Back three times (the search, the list, the document): the question's page, the same answer.
    for _ in range(3):
        browser.back()
    WebDriverWait(browser, 20).until(lambda d: d.current_url.endswith(f"/questions/{question}/#cite-{question}-1"))
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "answer-text")))
    assert browser.find_element(By.ID, "answer-text").text == "Bram Stoker"


def test_the_answer_has_its_own_address_kept_by_a_reload_and_by_back_and_forward(
    browser: Any, live_server: Any, seeded: Any, analyst: Any
) -> None:
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)
    assert browser.current_url == f"{base}/"
    question = ask(browser, QUESTION)
    permalink = f"{base}/questions/{question}/"

    # The answer pushed its permalink (HX-Push-Url): same document, new address.
    WebDriverWait(browser, 10).until(lambda d: d.current_url == permalink)
    assert browser.execute_script("return window.__sameDocument") is True
    assert browser.find_element(By.ID, "permalink").get_attribute("href") == permalink
    answer = browser.find_element(By.ID, "answer-text").text
    votes = vote_rows(browser)
    assert answer and len(votes) >= 2
    entries = browser.execute_script("return history.length")

    # Back: the ask page, fresh (not the snapshot of the panel still polling, which would push the
    # permalink again and trap Back), with the question among the recent ones.
    browser.back()
    WebDriverWait(browser, 20).until(lambda d: d.current_url == f"{base}/")
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "ask-form")))
    assert browser.find_elements(By.CSS_SELECTOR, "#question-panel[data-finished='false']") == []
    assert browser.find_element(By.ID, "result").text == ""
    recent = browser.find_element(By.LINK_TEXT, QUESTION)
    assert recent.get_attribute("href") == permalink

    # Forward: the permalink again, the same answer and votes; the history did not grow.
    browser.forward()
    WebDriverWait(browser, 20).until(lambda d: d.current_url == permalink)
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "answer-text")))
    assert browser.find_element(By.ID, "answer-text").text == answer
    assert vote_rows(browser) == votes
    assert browser.execute_script("return history.length") == entries

    # A reload shows the same, from the database.
    browser.refresh()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "answer-text")))
    assert browser.current_url == permalink
    assert browser.find_element(By.ID, "answer-text").text == answer
    assert vote_rows(browser) == votes
    assert browser.find_element(By.ID, "question-panel").get_attribute("data-finished") == "true"
    assert browser.title.startswith(f"Question #{question} ")
    assert browser.find_element(By.CSS_SELECTOR, "#question-panel h2").text == QUESTION
    assert csp_violations(browser) == []

    # On a phone the answer page fits too, its citation opened.
    set_viewport(browser, PHONE, mobile=True)
    browser.find_element(By.CSS_SELECTOR, "#citations summary").click()
    assert_no_sideways_scroll(browser, "question page with a citation open", PHONE[0])


def test_the_permalink_page_does_not_push_its_own_address_again(
    browser: Any, live_server: Any, transactional_db: Any, analyst: Any
) -> None:
    """A question still being answered, opened at its permalink: when the answer arrives the
    address is already right, so nothing is pushed (Back would otherwise stay on the page)."""
    from django.utils import timezone

    question = QuestionFactory(text=QUESTION, asked_by=analyst)
    log_in(browser, live_server.url, analyst.username)
    permalink = f"{live_server.url}/questions/{question.pk}/"
    browser.get(permalink)
    WebDriverWait(browser, 20).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='false']"))
    )
    entries = browser.execute_script("return history.length")
    Question.objects.filter(pk=question.pk).update(answer="Bram Stoker", confidence=0.9, answered_at=timezone.now())
    WebDriverWait(browser, 30).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
    )
    assert browser.find_element(By.ID, "answer-text").text == "Bram Stoker"
    assert browser.current_url == permalink
    assert browser.execute_script("return history.length") == entries


def test_copy_buttons_answer_the_keyboard_and_the_csv_exports_download(
    browser: Any, live_server: Any, seeded: Any, analyst: Any
) -> None:
    base = live_server.url
    # Let the page write and read the clipboard (headless Chromium refuses it otherwise).
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    log_in(browser, base, analyst.username)
    question = ask(browser, QUESTION)
    answer = browser.find_element(By.ID, "answer-text").text

    # Keyboard: Tab from the permalink reaches "Copy link", then "Copy answer"; Enter copies.
    copy_link = browser.find_element(By.ID, "copy-link")
    copy_answer = browser.find_element(By.ID, "copy-answer")
    assert copy_link.is_displayed() and copy_answer.is_displayed()  # shown once the script runs
    browser.execute_script("arguments[0].focus()", browser.find_element(By.ID, "permalink"))
    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element == copy_link
    status = browser.find_element(By.CSS_SELECTOR, ".answer-actions .copy-status")
    assert status.get_attribute("aria-live") == "polite" and status.text == ""
    copy_link.send_keys(Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda d: status.text != "")
    assert status.text == "Copied.", status.text
    browser.set_script_timeout(10)
    clipboard = "const done = arguments[0]; navigator.clipboard.readText().then(done, (e) => done('refused: ' + e))"
    assert browser.execute_async_script(clipboard) == f"{base}/questions/{question}/"

    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element == copy_answer
    browser.execute_script("arguments[0].textContent = ''", status)
    copy_answer.send_keys(Keys.SPACE)
    WebDriverWait(browser, 10).until(lambda d: status.text == "Copied.")
    assert browser.execute_async_script(clipboard) == answer

    # The question's votes as CSV: the link's own address, fetched with the session.
    link = browser.find_element(By.ID, "votes-csv")
    assert link.get_attribute("download") is not None
    got = download(browser, link.get_attribute("href"))
    assert got["type"].startswith("text/csv")
    assert got["disposition"] == f'attachment; filename="question-{question}-votes.csv"'
    rows = list(csv.reader(io.StringIO(got["text"])))
    assert rows[0] == VOTES_HEADER
    shown = vote_rows(browser)
    assert [(r[2], r[4]) for r in rows[1:]] == [(source, response) for source, response, _ in shown]
    assert [r[0] for r in rows[1:]] == [str(n) for n in range(1, len(shown) + 1)]
    assert [f"{float(r[9]):.2f}" for r in rows[1:]] == [weight for _, _, weight in shown]

    # A run's scores as CSV, from its page: best first, rounded to four places.
    sources = {s.name: s for s in Source.objects.all()}
    run = EstimationRunFactory(succeeded=True, query_set=seeded["query_set"], sources=list(sources.values()))
    for name, reliability in {"encyclopedia": 0.91234567, "rumour-mill": 0.1, "almanac": 0.8}.items():
        ReliabilityScoreFactory(run=run, source=sources[name], reliability=reliability, answers=3, agreements=2)
    browser.get(f"{base}/runs/{run.pk}/")
    link = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "run-scores-csv")))
    href = link.get_attribute("href")
    assert href is not None, "the CSV link has an address"
    got = download(browser, href)
    assert got["type"].startswith("text/csv")
    assert got["disposition"] == f'attachment; filename="run-{run.pk}-scores.csv"'
    rows = list(csv.reader(io.StringIO(got["text"])))
    assert rows[0] == SCORES_HEADER
    assert [(r[1], r[2], r[6], r[7]) for r in rows[1:]] == [
        ("encyclopedia", "0.9123", "3", "2"),
        ("almanac", "0.8", "3", "2"),
        ("rumour-mill", "0.1", "3", "2"),
    ]
    assert rows[1][0] == str(sources["encyclopedia"].pk)

    # Signed out, the same address gives no data (the login page).
    browser.delete_all_cookies()
    browser.get(f"{base}/login/")
    got = browser.execute_async_script(_FETCH, f"/runs/{run.pk}/scores.csv")
    assert got["status"] == 200 and got["type"].startswith("text/html")  # redirected to the login page
    assert "encyclopedia" not in got["text"] and 'name="password"' in got["text"]
