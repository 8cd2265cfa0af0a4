"""Screenshots of every dashboard page for the docs, desktop and phone (not a test).

    .venv/bin/python scripts/screenshots.py [--queries 12] [--out docs/screenshots] [--only ask,runs]

Writes docs/screenshots/<page>.png (1400 px wide, full page, as the earlier ones) and
<page>-phone.png (390 x 844 CSS px, a phone's viewport, at twice the pixels, full page).

In a scratch database ``screenshots`` on the embedded PostgreSQL (dropped and recreated
first; the main database is never touched), or the one named by BENCH_DATABASE_URL, it
loads a slice of the demo corpus (sources/demo_data: its six sources with the documents of
the first ``--queries`` fact-checking queries and of the questions it asks), starts a real
Celery worker in this process (on a filesystem broker in a temporary folder), runs two
estimation runs and asks questions through the product's services (the first question on
the ask page, as a person would), serves the site from a thread and photographs each page
with headless Chromium (Debian's chromium + chromedriver, as the browser tests use). It
fails when a page reports a Content-Security-Policy violation or scrolls sideways on the
phone.

The claims pages (claims-*.png and claims-*-phone.png) come from scripts/screenshots_claims.py,
which loads a public flights data set; this script's helpers take its phone shots too.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.core.servers.basehttp import ThreadedWSGIServer
    from selenium.webdriver import Chrome

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

SCRATCH_DB = "screenshots"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
DEMO = ROOT / "sources" / "demo_data"
DESKTOP_WIDTH = 1400
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
MAX_HEIGHT = 5000  # CSS px: longer pages are cut (as the browser tests' screenshots)
JOB_TIMEOUT = 900.0  # seconds: the worker loads its models on the first task
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


# --- Browser and server (shared with scripts/screenshots_claims.py) ----------------------


def serve() -> tuple[str, ThreadedWSGIServer]:
    """The site on a free local port, served from a daemon thread."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    httpd = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    httpd.set_app(WSGIHandler())
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def browser() -> tuple[Chrome, str]:
    """Headless Chromium that records Content-Security-Policy violations from every page's first byte."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rrag-shots-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={DESKTOP_WIDTH},1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_CSP})
    return driver, profile


def _page_height(driver: Chrome) -> int:
    script = "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
    return min(max(int(driver.execute_script(script)), 800), MAX_HEIGHT)


def full_page(driver: Chrome, path: Path) -> None:
    """A full-page screenshot 1400 px wide (as docs/screenshots' others)."""
    for _ in range(3):  # the layout (wrapping) changes with the viewport: measure again
        height = _page_height(driver)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": DESKTOP_WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    print(f"wrote {path}")


def phone_page(driver: Chrome, path: Path) -> None:
    """A full-page screenshot of the page on a phone (390 CSS px wide); fails if the page is
    wider than the phone (it would scroll sideways)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    width = int(driver.execute_script("return document.documentElement.scrollWidth"))
    assert width <= PHONE["width"], f"{driver.current_url} is {width} px wide on a {PHONE['width']} px phone"
    height = _page_height(driver)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**PHONE, "height": max(height, PHONE["height"])})
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    print(f"wrote {path}")


def both(driver: Chrome, out: Path, name: str) -> None:
    """The page as it is now, on a desktop and on a phone; no CSP violation allowed."""
    violations = driver.execute_script("return window.__cspViolations || []")
    assert not violations, f"{driver.current_url}: {violations}"
    full_page(driver, out / f"{name}.png")
    phone_page(driver, out / f"{name}-phone.png")


# --- The world: demo sources, runs, questions --------------------------------------------


@contextmanager
def worker() -> Iterator[None]:
    """A real Celery worker in this process, on a filesystem broker of its own."""
    from celery.contrib.testing.worker import start_worker

    from reliability_site.celery import app, broker_settings

    broker = tempfile.mkdtemp(prefix="rrag-shots-broker-")
    app.conf.broker_url  # noqa: B018 - load the app's own configuration first, then override it
    app.conf.update(broker_settings("", broker))
    try:
        with start_worker(
            app,
            pool="solo",
            concurrency=1,
            queues=["ingest", "gpu", "default"],
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30,
        ):
            yield
    finally:
        shutil.rmtree(broker, ignore_errors=True)


def _account(username: str, role: str) -> str:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    password = secrets.token_urlsafe(16)
    user = get_user_model().objects.create_user(username, password=password)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return password


FOLLOW_UP = "When was he born?"  # asked as a follow-up of the first question the world asks (a "who" question)


def load_world(n_queries: int, n_asked: int) -> dict[str, Any]:
    """The demo's sources holding the documents of the chosen questions, its query set cut to
    ``n_queries`` queries, two finished estimation runs (the second with another alignment
    threshold, so the pages show changes and trends), ``n_asked`` answered questions, and
    an analyst and a curator with fresh passwords."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from core.models import EstimationRun, QueryCollection
    from core.roles import ANALYST, CURATOR
    from core.services.asking import start_question
    from core.services.estimation import start_estimation_run
    from runtime.backends import configured_embedder
    from runtime.jobs import wait_for
    from sources.ingest import ParsedDocument
    from sources.models import Source
    from sources.services import FileOutcome, store_documents

    manifest = json.loads((DEMO / "manifest.json").read_text())
    queries = json.loads((DEMO / "queries.json").read_text())
    estimation, asked = queries["estimation"][:n_queries], queries["ask"][: n_asked + 1]
    wanted = {q["question"][:80] for q in estimation + asked}
    embedder = configured_embedder()
    for entry in manifest["sources"]:
        source = Source.objects.create(name=entry["name"], kind=entry["kind"], description=entry["description"])
        docs = []
        with open(DEMO / entry["file"], encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                if record["title"].rsplit(" (", 1)[0] in wanted:
                    docs.append(ParsedDocument(text=record["text"], title=record["title"]))
        store_documents(
            source,
            docs,
            embedder,
            chunk_size=settings.CHUNK_SIZE_WORDS,
            chunk_overlap=settings.CHUNK_OVERLAP_WORDS,
            outcome=FileOutcome(name=entry["file"]),
        )
        print(f"{source.name}: {len(docs)} documents")
    query_set = QueryCollection.objects.create(name="demo", description="Fact-checking queries of the demo corpus.")
    for item in estimation:
        query_set.queries.create(question=item["question"], reference_answers=item["reference_answers"])

    passwords = {"analyst": _account("analyst", ANALYST), "curator": _account("curator", CURATOR)}
    users = get_user_model().objects
    curator, analyst = users.get(username="curator"), users.get(username="analyst")
    for tau in (0.1, 0.05):
        run = start_estimation_run(query_set=query_set, sources="all", params={"tau": tau}, user=curator)
        assert run.job is not None  # start_estimation_run sets it
        job = wait_for(run.job, timeout=JOB_TIMEOUT)
        run.refresh_from_db()
        assert run.state == EstimationRun.State.SUCCEEDED, f"run #{run.pk}: {job.state} {job.error[-2000:]}"
        print(f"run #{run.pk} (tau {tau}): {job.message}")
    first = None
    for item in asked[1:]:
        question = start_question(item["question"], strategy="ra-rag", user=analyst)
        assert question.job is not None  # start_question sets it
        job = wait_for(question.job, timeout=JOB_TIMEOUT)
        first = first or question
        print(f"asked {item['question']!r}: {job.state}")
    if first is not None:  # a follow-up of the first, for the conversation's page
        follow_up = start_question(FOLLOW_UP, strategy="ra-rag", user=analyst, follows=first.pk)
        assert follow_up.job is not None
        job = wait_for(follow_up.job, timeout=JOB_TIMEOUT)
        print(f"asked the follow-up {FOLLOW_UP!r} as {follow_up.standalone!r}: {job.state}")
    return {"passwords": passwords, "ask": asked[0]["question"]}


# --- The pages -----------------------------------------------------------------------


def log_in(driver: Chrome, base: str, username: str, password: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.delete_all_cookies()
    driver.get(f"{base}/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.ID, "login-button").click()
    WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "ask-form")))


def pages() -> list[tuple[str, str, str]]:
    """(screenshot name, path, CSS selector that shows the page is ready) of the pages that
    need only a URL; the ask page, the login page and the run form are taken on their own."""
    from urllib.parse import urlencode

    from django.urls import reverse

    from core.models import EstimationRun, Question
    from sources.models import Document, Source
    from tasks.models import Job

    run = EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED).order_by("-created_at").first()
    question = Question.objects.exclude(answered_at=None).filter(follows=None).order_by("created_at").last()
    follow_up = Question.objects.exclude(answered_at=None).exclude(follows=None).order_by("created_at").last()
    weakest = Source.objects.exclude(reliability=None).order_by("reliability").first()
    job = Job.objects.filter(kind=Job.Kind.ESTIMATE).order_by("-created_at").first()
    document = Document.objects.filter(source=weakest).order_by("id").first()
    assert run and question and follow_up and weakest and job and document, "the world is incomplete"
    search = {"q": max(document.title.split() or ["a"], key=len)}  # a full-text search of the source's documents
    return [
        ("history", reverse("history"), "#history-table"),
        ("question", reverse("question-detail", args=[question.pk]), "#question-panel"),
        ("follow_up", reverse("question-detail", args=[follow_up.pk]), "#question-panel"),
        ("sources", reverse("source-list"), "#source-table"),
        ("source_detail", reverse("source-detail", args=[weakest.pk]), "#document-table"),
        ("source_documents", f"{reverse('source-documents', args=[weakest.pk])}?{urlencode(search)}", "main"),
        ("document", reverse("document-detail", args=[document.pk]), "main"),
        ("run_detail", reverse("run-detail", args=[run.pk]), "#score-table"),
        ("conflicts", reverse("conflicts"), "#conflict-graph"),
        ("jobs", reverse("job-list"), "main table"),
        ("job_detail", reverse("job-detail", args=[job.pk]), "#job-status"),
        ("glossary", reverse("glossary"), "dl.glossary"),
    ]


def photograph(base: str, world: dict[str, Any], out: Path, only: set[str]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    def wanted(name: str) -> bool:
        return not only or name in only

    def ready(css: str, seconds: int = 30) -> None:
        WebDriverWait(driver, seconds).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))

    driver, profile = browser()
    try:
        out.mkdir(parents=True, exist_ok=True)
        if wanted("login"):
            driver.get(f"{base}/login/")
            ready("#login-button")
            both(driver, out, "login")

        log_in(driver, base, "analyst", world["passwords"]["analyst"])
        if wanted("ask"):  # asked on the page, as a person would: the answer arrives in place
            driver.find_element(By.ID, "id_text").send_keys(world["ask"])
            driver.find_element(By.ID, "ask-button").click()
            WebDriverWait(driver, int(JOB_TIMEOUT)).until(
                ec.presence_of_element_located((By.CSS_SELECTOR, "#question-panel[data-finished=true]"))
            )
            both(driver, out, "ask")
        for name, path, css in pages():
            if wanted(name):
                driver.get(base + path)
                ready(css)
                both(driver, out, name)

        log_in(driver, base, "curator", world["passwords"]["curator"])
        if wanted("runs"):  # a curator's view: the run form opened
            driver.get(f"{base}/runs/")
            ready("#run-table")
            for summary in driver.find_elements(By.CSS_SELECTOR, "#start-run summary"):
                summary.click()
            both(driver, out, "runs")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=12, help="fact-checking queries of the demo set to load")
    parser.add_argument("--asked", type=int, default=3, help="questions asked besides the one on the ask page")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--only", default="", help="comma-separated screenshot names (default: all)")
    args = parser.parse_args()
    scratch_db.setup_django(SCRATCH_DB)
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    with worker():
        world = load_world(args.queries, args.asked)
        base, httpd = serve()
        try:
            photograph(base, world, args.out, only)
        finally:
            httpd.shutdown()


if __name__ == "__main__":
    main()
