"""Headless Chromium (Debian's chromium + chromedriver) driving the real server
(pytest-django's live_server) with a real Celery worker, on a small seeded world."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.helpers import FACTS, FALSE_DOCS, QUERIES, TRUE_DOCS

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = pytest.mark.browser


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


@pytest.fixture
def seeded(worker: Any, embedder: Any, curator: Any) -> dict[str, Any]:
    """Five sources (three factual, two spreading the same misinformation) with embedded
    documents, a query set of three fact-checking queries, and the shared curator account
    (which logs in with tests.factories.PASSWORD)."""
    from sources.ingest import ParsedDocument
    from sources.models import Source
    from sources.services import FileOutcome, store_documents
    from tests.factories import FactQueryFactory, QueryCollectionFactory, SourceFactory

    for name, reliable in FACTS.items():
        source = SourceFactory(name=name, kind=Source.Kind.REFERENCE if reliable else Source.Kind.SOCIAL)
        docs = [
            ParsedDocument(text=text, title=title, url=f"https://{name}.example.org/{title.lower().replace(' ', '-')}")
            for title, text in (TRUE_DOCS if reliable else FALSE_DOCS)
        ]
        store_documents(source, docs, embedder, chunk_size=120, chunk_overlap=20, outcome=FileOutcome(name=name))
    query_set = QueryCollectionFactory(name="demo", description="Browser test facts")
    for question, answers in QUERIES:
        FactQueryFactory(query_set=query_set, question=question, reference_answers=answers)
    return {"user": curator, "query_set": query_set}
