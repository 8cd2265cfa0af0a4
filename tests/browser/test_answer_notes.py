"""The answer's plain-language notes in headless Chromium, at a desktop (1280 px) and a phone
(390 px) width: an abstention ("No reliable answer", its reason and what the low sources said,
and no confident answer), a contested answer and a copied one, each note on the answer's own
page right under the answer and on the first screen, with the confidence the API serves, and
each marked in the list of questions asked.

The answers are the product's own (core.services.asking.ask_now: the configured extractive
reader and the real embedder, in-process) over five sources whose reliabilities come from a
finished estimation run with copy detection that found two of them colluding; the ask page's
live panel is checked too, through the real worker."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from core.models import Question
from core.services.asking import ask_now
from sources.ingest import ParsedDocument
from sources.models import Source
from sources.services import FileOutcome, store_documents
from tests.browser.helpers import (
    ARTIFACTS,
    PHONE,
    WAIT,
    assert_no_sideways_scroll,
    axe_violations,
    csp_violations,
    log_in,
    set_viewport,
    watch_csp,
)
from tests.factories import EstimationRunFactory, ReliabilityScoreFactory, SourceDependenceFactory, SourceFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DESKTOP = (1280, 900)
# Estimated reliabilities: three sources above chance, two colluding ones below it.
RELIABILITY = {"encyclopedia": 0.9, "almanac": 0.85, "gazette": 0.8, "rumour-mill": 0.3, "echo-blog": 0.3}
EIFFEL = "The Eiffel Tower is located in {}. It was completed in 1889 for the World's Fair."
EVEREST = "Mount Everest is the highest mountain on Earth, rising {} metres above sea level."
MONA_LISA = "The Mona Lisa was painted by Michelangelo in Florence around 1503."
DOCUMENTS = {
    "encyclopedia": [("Eiffel Tower", EIFFEL.format("Paris")), ("Mount Everest", EVEREST.format(8849))],
    "almanac": [("Eiffel Tower", EIFFEL.format("Paris")), ("Mount Everest", EVEREST.format(7200))],
    "gazette": [("Eiffel Tower", EIFFEL.format("Lyon")), ("Mount Everest", EVEREST.format(7200))],
    "rumour-mill": [("Mona Lisa", MONA_LISA), ("Mount Everest", EVEREST.format(7200))],
    "echo-blog": [("Mona Lisa", MONA_LISA), ("Mount Everest", EVEREST.format(7200))],
}
# Only the two sources estimated below chance hold a passage about it: no reliable answer.
ABSTAINED = "Who painted the Mona Lisa?"
# Two reliable sources against one: the loser holds more than a quarter of the weight.
CONTESTED = "In which city is the Eiffel Tower located?"
# The colluding pair's figure, repeated by two reliable sources, outweighs the third's.
COPIED = "How high is Mount Everest in metres?"

# The confidence as the page shows it, and every note under the answer.
_READ = """
const panel = document.getElementById("question-panel") || document;
const box = document.querySelector(".question-answer-box").getBoundingClientRect();
return {
  confidence: document.getElementById("answer-confidence").textContent.trim(),
  boxBottom: box.bottom + window.scrollY,
  notes: [...panel.querySelectorAll("p.note")].map((p) => {
    const r = p.getBoundingClientRect();
    return {text: p.textContent.trim(), top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,
            visible: r.height > 0 && getComputedStyle(p).visibility === "visible" && !p.closest("details:not([open])"),
            beforePermalink: !!(p.compareDocumentPosition(document.getElementById("permalink")) & Node.DOCUMENT_POSITION_FOLLOWING)};
  }),
};
"""
_API = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "same-origin", headers: {Accept: "application/json"}}).then(
  async (r) => done({status: r.status, body: await r.json()}), (e) => done({status: 0, error: String(e)}));
"""


def build_world(embedder: Any) -> None:
    """The five sources with their documents, and a finished run (copy detection: AccuCopy)
    that estimated them and found rumour-mill and echo-blog colluding."""
    sources = {}
    for name, documents in DOCUMENTS.items():
        source = SourceFactory(name=name, kind=Source.Kind.REFERENCE if RELIABILITY[name] > 0.5 else Source.Kind.SOCIAL)
        parsed = [
            ParsedDocument(text=text, title=title, url=f"https://{name}.example.org/{title.lower().replace(' ', '-')}")
            for title, text in documents
        ]
        store_documents(source, parsed, embedder, chunk_size=120, chunk_overlap=20, outcome=FileOutcome(name=name))
        sources[name] = source
    run = EstimationRunFactory(succeeded=True, sources=list(sources.values()), params={"estimator": "accucopy"})
    for name, source in sources.items():
        ReliabilityScoreFactory(run=run, source=source, reliability=RELIABILITY[name], answers=40, agreements=30)
        Source.objects.filter(pk=source.pk).update(
            reliability=RELIABILITY[name], reliability_answers=40, reliability_updated_at=timezone.now()
        )
    SourceDependenceFactory(run=run, source_a=sources["rumour-mill"], source_b=sources["echo-blog"])


def read_answer(driver: Any) -> dict[str, Any]:
    got: dict[str, Any] = driver.execute_script(_READ)
    got["answer"] = driver.find_element(By.ID, "answer-text").text
    return got


def api_question(driver: Any, base: str, pk: int) -> dict[str, Any]:
    driver.set_script_timeout(30)
    got = driver.execute_async_script(_API, f"{base}/api/questions/{pk}/")
    assert got["status"] == 200, got
    body: dict[str, Any] = got["body"]
    return body


def check_notes_near_the_answer(page: dict[str, Any], starts: list[str], height: int, name: str) -> list[str]:
    """Each expected note (by its first words) is shown, visible, between the answer and the
    answer's actions, and begins on the first screen; the notes' texts in order."""
    notes = page["notes"]
    texts = [n["text"] for n in notes]
    for start in starts:
        found = [n for n in notes if n["text"].startswith(start)]
        assert found, f"{name}: no note “{start}…” under the answer; notes shown: {texts}"
        note = found[0]
        assert note["visible"], f"{name}: the note “{start}…” is hidden"
        assert note["beforePermalink"], f"{name}: the note “{start}…” is not under the answer"
        assert note["top"] - page["boxBottom"] < 250, f"{name}: the note “{start}…” is far from the answer: {note}"
        assert note["top"] < height, f"{name}: the note “{start}…” starts below the first screen ({note['top']} px)"
    return texts


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_notes_are_shown_with_the_answer_and_its_confidence_is_the_apis(
    browser: Any, live_server: Any, embedder: Any, analyst: Any, viewport: str
) -> None:
    size = DESKTOP if viewport == "desktop" else PHONE
    build_world(embedder)
    asked = {text: ask_now(text, user=analyst) for text in (ABSTAINED, CONTESTED, COPIED)}
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)

    for text, question in asked.items():
        set_viewport(browser, size, mobile=viewport == "phone")
        browser.get(f"{base}/questions/{question.pk}/")
        WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "answer-text")))
        page = read_answer(browser)
        api = api_question(browser, base, question.pk)
        name = f"{text} ({viewport})"

        # The page's confidence is the API's, and so are its notes, in the same order.
        assert api["confidence"] is not None and page["confidence"] == f"{api['confidence']:.2f}", (name, page, api)
        assert api["answer"] == page["answer"], (name, page, api)

        if text == ABSTAINED:
            texts = check_notes_near_the_answer(page, ["No reliable answer:"], size[1], name)
            (note,) = [t for t in texts if t.startswith("No reliable answer:")]
            # Its reason, and what the low sources said, shown beside the abstention, not as the answer.
            assert "less often than chance" in note and "rumour-mill (0.30)" in note and "echo-blog (0.30)" in note
            assert "They said “Michelangelo”" in note
            assert page["answer"] == "I don't know" and "Michelangelo" not in page["answer"]
            assert page["confidence"] == "0.00" and api["confidence"] == 0.0
            assert not browser.find_elements(By.CSS_SELECTOR, "#answer a.cite-ref")  # nothing cited for it
            assert not browser.find_elements(By.CSS_SELECTOR, "table.clusters tr.chosen")  # no answer chosen
            assert not browser.find_elements(By.ID, "low-evidence")  # no caution box for a non-answer
        elif text == CONTESTED:
            texts = check_notes_near_the_answer(page, ["Contested: gazette answered “Lyon”"], size[1], name)
            assert page["answer"].startswith("Paris")
            # A contest is not low evidence: the caution box says only to take care.
            warning = browser.find_element(By.ID, "low-evidence").text
            assert warning.startswith("Treat this answer with caution.") and "Low evidence" not in warning
        else:
            starts = ["Contested: encyclopedia answered “8849 metres”", "Copied: rumour-mill and echo-blog"]
            texts = check_notes_near_the_answer(page, starts, size[1], name)
            assert page["answer"].startswith("7200 metres")
            warning = browser.find_element(By.ID, "low-evidence")
            assert warning.text.startswith("Low evidence: treat this answer with caution.")  # at 0.49
            assert all(t in warning.text for t in texts)
        assert texts == api["notes"], (name, texts, api["notes"])

        assert csp_violations(browser) == []
        assert axe_violations(browser) == []
        if viewport == "phone":
            assert_no_sideways_scroll(browser, name, PHONE[0])
        # The first screen, as the reader sees it at this width.
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / f"answer_notes_{viewport}_{list(asked).index(text)}.png"))

    # The list of questions asked marks each of these answers: none of them reads as plain.
    set_viewport(browser, size, mobile=viewport == "phone")
    browser.get(f"{base}/questions/")
    rows = WebDriverWait(browser, 20).until(
        ec.presence_of_all_elements_located((By.CSS_SELECTOR, "#history-table tbody tr"))
    )
    marks = {
        row.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").text: [
            tag.text for tag in row.find_elements(By.CSS_SELECTOR, ".history-note")
        ]
        for row in rows
    }
    assert marks == {ABSTAINED: ["see the note"], CONTESTED: ["caution"], COPIED: ["caution"]}, marks
    assert axe_violations(browser) == []
    if viewport == "phone":
        assert_no_sideways_scroll(browser, "the questions asked", PHONE[0])


@pytest.mark.worker
def test_the_ask_page_shows_the_notes_as_the_answer_arrives_on_a_phone(
    browser: Any, live_server: Any, worker: Any, embedder: Any, analyst: Any
) -> None:
    build_world(embedder)
    watch_csp(browser)
    base = live_server.url
    log_in(browser, base, analyst.username)
    set_viewport(browser, PHONE, mobile=True)
    for text, starts in ((ABSTAINED, ["No reliable answer:"]), (COPIED, ["Contested:", "Copied:"])):
        browser.get(f"{base}/")
        box = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "id_text")))
        box.send_keys(text, Keys.ENTER)
        panel = WebDriverWait(browser, WAIT).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished='true']"))
        )
        pk = int(panel.get_attribute("data-question") or 0)
        browser.execute_script("window.scrollTo(0, document.getElementById('question-panel').offsetTop)")
        page = read_answer(browser)
        # The panel's notes are those of the answer the worker stored, which the API serves.
        offset = int(browser.execute_script("return window.scrollY"))
        texts = check_notes_near_the_answer(page, starts, offset + PHONE[1], text)
        api = api_question(browser, base, pk)
        assert texts == api["notes"] == Question.objects.get(pk=pk).notes
        assert page["confidence"] == f"{api['confidence']:.2f}"
        if text == ABSTAINED:
            assert page["answer"] == "I don't know" and page["confidence"] == "0.00"
        assert csp_violations(browser) == []
        assert_no_sideways_scroll(browser, f"the ask page: {text}", PHONE[0])
