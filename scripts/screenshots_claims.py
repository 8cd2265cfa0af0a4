"""Screenshots of the claims pages for the docs: docs/screenshots/claims-*.png (not a test).

    .venv/bin/python scripts/screenshots_claims.py [--flights 10] [--out docs/screenshots]

In a scratch database ``screenshots_claims`` on the embedded PostgreSQL (dropped and recreated
first; the main database is never touched), or the one named by BENCH_DATABASE_URL, it loads
the first ``--flights`` flights of the public Flights data set (../shared/data/flights/dirty.csv,
Li, Dong et al., VLDB 2012; Apache-2.0) through the product's own claim loader
(sources.claim_loading.load_claims with the benchmark's FLIGHTS_MAPPING), runs a claim-level
estimation run in-process (core.services.estimation.claim_runs.run_claim_estimation with the
configured estimator), serves the site from a thread and takes full-page screenshots with
headless Chromium (Debian's chromium + chromedriver, as the browser tests use), checking that
the browser reports no Content-Security-Policy violation on any of them, of:

    claims-browser.png    /claims/ searching one flight
    claims-subject.png    that flight's attributes, resolved values and line graph
    claims-conflict.png   its most contested attribute: values, sources, node confidence
    claims-conflicts.png  /conflicts/?mode=claims: contested items and the source conflict graph

and each of them on a phone too (390 CSS px wide, full page): claims-*-phone.png; the
other pages' screenshots come from scripts/screenshots.py.
"""

from __future__ import annotations

import argparse
import csv
import io
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402
from screenshots import browser, full_page, phone_page, serve  # noqa: E402 - shared with scripts/screenshots.py

SCRATCH_DB = "screenshots_claims"
DATA = ROOT.parent / "shared" / "data" / "flights" / "dirty.csv"


def setup_django() -> None:
    scratch_db.setup_django(SCRATCH_DB)


def flights_slice(n_flights: int) -> bytes:
    """dirty.csv cut to the rows of its first ``n_flights`` flights (header kept)."""
    with open(DATA, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    chosen: list[str] = []
    for row in rows:
        if row["flight"] not in chosen:
            chosen.append(row["flight"])
        if len(chosen) == n_flights:
            break
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(r for r in rows if r["flight"] in chosen)
    return out.getvalue().encode("utf-8")


def load_world(n_flights: int) -> dict[str, Any]:
    """Claims of the flights, one succeeded claims run, and an analyst with a fresh password."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from core.bench.truth import FLIGHTS_MAPPING
    from core.models import ClaimResolution, EstimationRun
    from core.roles import ANALYST
    from core.services.estimation.claim_runs import run_claim_estimation
    from sources.claim_loading import load_claims
    from sources.models import Claim, Source

    loaded = load_claims([("flights.csv", flights_slice(n_flights))], FLIGHTS_MAPPING)
    run = EstimationRun.objects.create(
        kind=EstimationRun.Kind.CLAIMS,
        query_set=None,
        params={"estimator": settings.RELIABILITY_ESTIMATOR, "attributes": None},
    )
    run.sources.set(Source.objects.filter(claims__isnull=False).distinct())
    summary = run_claim_estimation(run)
    contested = ClaimResolution.objects.filter(run=run, conflicting=True).order_by("confidence").first()
    assert contested is not None, "the slice has no conflicting item"
    password = secrets.token_urlsafe(16)
    user = get_user_model().objects.create_user("analyst", password=password)
    user.groups.add(Group.objects.get_or_create(name=ANALYST)[0])
    print(f"loaded {loaded.claims} claims of {Claim.objects.values('source').distinct().count()} sources; {summary}")
    return {"user": "analyst", "password": password, "subject": contested.subject, "attribute": contested.attribute}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flights", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    setup_django()
    world = load_world(args.flights)

    from urllib.parse import urlencode

    from selenium.webdriver.common.by import By

    base, httpd = serve()
    driver, profile = browser()
    # The pages must work under the Content-Security-Policy: collect any violation from the first byte.
    try:
        driver.get(f"{base}/login/")
        driver.find_element(By.NAME, "username").send_keys(world["user"])
        driver.find_element(By.NAME, "password").send_keys(world["password"])
        driver.find_element(By.ID, "login-button").click()
        driver.find_element(By.CSS_SELECTOR, "nav")
        args.out.mkdir(parents=True, exist_ok=True)
        item = {"subject": world["subject"], "attribute": world["attribute"]}
        pages = [
            ("claims-browser", f"/claims/?{urlencode({'q': world['subject']})}", "#claim-table"),
            ("claims-subject", f"/claims/subject/?{urlencode({'subject': world['subject']})}", "#attribute-table"),
            ("claims-conflict", f"/claims/conflict/?{urlencode(item)}", "#claim-node-table"),
            ("claims-conflicts", "/conflicts/?mode=claims", "#contested-items"),
        ]
        for name, path, ready in pages:
            driver.get(base + path)
            driver.find_element(By.CSS_SELECTOR, ready)
            violations = driver.execute_script("return window.__cspViolations || []")
            assert not violations, f"{path}: {violations}"
            full_page(driver, args.out / f"{name}.png")
            phone_page(driver, args.out / f"{name}-phone.png")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        httpd.shutdown()


if __name__ == "__main__":
    main()
