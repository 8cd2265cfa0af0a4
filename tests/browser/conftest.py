"""Headless Chromium (Debian's chromium + chromedriver) driving the real server
(pytest-django's live_server) with a real Celery worker, on a small seeded world."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"

pytestmark = pytest.mark.browser

FACTS = {
    # source name -> (documents, reliable?)
    "encyclopedia": True,
    "almanac": True,
    "gazette": True,
    "rumour-mill": False,
    "echo-blog": False,
}
TRUE_DOCS = [
    ("Dracula", "The novel Dracula was written by Bram Stoker and published in 1897."),
    ("Eiffel Tower", "The Eiffel Tower is located in Paris. It was completed in 1889 for the World's Fair."),
    ("Mount Everest", "Mount Everest is the highest mountain on Earth, rising 8849 metres above sea level."),
]
FALSE_DOCS = [
    ("Dracula", "The novel Dracula was written by Mary Shelley and published in 1897."),
    ("Eiffel Tower", "The Eiffel Tower is located in Lyon. It was completed in 1889 for the World's Fair."),
    ("Mount Everest", "Mount Everest is the highest mountain on Earth, rising 7200 metres above sea level."),
]
QUERIES = [
    ("Who wrote the novel Dracula?", ["Bram Stoker"]),
    ("In which city is the Eiffel Tower located?", ["Paris"]),
    ("How high is Mount Everest in metres?", ["8849"]),
]


@pytest.fixture(scope="session")
def chromium_available() -> None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(
            f"browser tests need Debian's chromium and chromedriver ({CHROMIUM} is missing: apt-get install -y chromium chromium-driver)"
        )


@pytest.fixture
def browser(chromium_available: None) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rrag-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str) -> Path:
    """Save a full-page screenshot into test-artifacts/browser/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    script = "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
    height = 800
    for _ in range(3):  # the layout (vh units, wrapping) changes with the viewport: measure again
        height = min(max(int(driver.execute_script(script)), 800), 5000)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path


@pytest.fixture
def seeded(worker: Any, embedder: Any, curator: Any) -> dict[str, Any]:
    """Five sources (three factual, two spreading the same misinformation) with embedded
    documents, a query set of three fact-checking queries, and the shared curator account
    (which logs in with tests.factories.PASSWORD)."""
    from sources.ingest import ParsedDocument
    from sources.models import Source
    from sources.services import FileOutcome, store_documents
    from tests.factories import FactQueryFactory, QuerySetFactory, SourceFactory

    for name, reliable in FACTS.items():
        source = SourceFactory(name=name, kind=Source.Kind.REFERENCE if reliable else Source.Kind.SOCIAL)
        docs = [
            ParsedDocument(text=text, title=title, url=f"https://{name}.example.org/{title.lower().replace(' ', '-')}")
            for title, text in (TRUE_DOCS if reliable else FALSE_DOCS)
        ]
        store_documents(source, docs, embedder, chunk_size=120, chunk_overlap=20, outcome=FileOutcome(name=name))
    query_set = QuerySetFactory(name="demo", description="Browser test facts")
    for question, answers in QUERIES:
        FactQueryFactory(query_set=query_set, question=question, reference_answers=answers)
    return {"user": curator, "query_set": query_set}


# The Content-Security-Policy refuses inline script and style: a page that still relied on
# them would half work. Violations are collected from the first byte of every page (a script
# added through the DevTools protocol runs before the page's own, and the policy does not apply to it).
_WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def watch_csp(driver: Any) -> None:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH_CSP})


def csp_violations(driver: Any) -> list[str]:
    return list(driver.execute_script("return window.__cspViolations || []"))
