"""Claims pages benchmark: the claim conflict view of one item that 900 sources assert (not a test).

    .venv/bin/python scripts/bench_claim_page.py [--sources 900] [--repeat 20] [--json]

The issue's goal: the conflict page of one subject/attribute renders in under 200 ms with 900
sources. This script creates, in a scratch database ``bench_claim_page`` on the embedded
PostgreSQL (dropped and recreated first; the main database is never touched) or on the server
named by BENCH_DATABASE_URL (a URL whose database it may drop and recreate):

- ``--sources`` sources with reliabilities drawn from Beta(4, 2) and 5-50 answers behind them;
- for ``--flights`` flights x 4 time attributes, one claim per source (so 900 sources x 5 flights
  x 4 attributes = 18,000 claims, the benchmarked item among them): 70 % of the sources give the
  true time, the others one of five wrong ones, spelt in several raw forms ("7:10 a.m.",
  "7:10 AM", "07:10"), with file/line/field provenance like a loaded CSV;
- a succeeded claims run resolving every item (ClaimResolution rows, the values with their
  sources), so the page shows a resolved value as it would after ``truth_discovery``.

It then logs an analyst in with Django's test client and requests the page ``--repeat`` times
after three warm-up requests, printing the median (and min / max) wall time per request, the
SQL queries per request, and, for comparison, the service alone
(core.services.pages.claim_conflict.conflict_view, without the links and the value graph
the view adds) and the other claims pages on the same data.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.test import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

BENCH_DB = "bench_claim_page"
ATTRIBUTES = ("scheduled departure time", "actual departure time", "scheduled arrival time", "actual arrival time")
SUBJECT, ATTRIBUTE = "AA-3859-IAH-ORD", "actual departure time"


def setup_django() -> None:
    scratch_db.setup_django(BENCH_DB, test_environment=True)


def _raw_forms(hhmm: str) -> list[str]:
    hour, minute = (int(x) for x in hhmm.split(":"))
    twelve = hour % 12 or 12
    half = "a.m." if hour < 12 else "p.m."
    return [f"{twelve}:{minute:02d} {half}", f"{twelve}:{minute:02d} {half[0].upper()}M", hhmm]


def build(n_sources: int, n_flights: int, seed: int = 7) -> dict[str, object]:
    """Sources, claims and a claims run with its resolutions; returns counts."""
    from django.utils import timezone

    from core.models import ClaimResolution, EstimationRun
    from sources.models import Claim, Source

    rng = random.Random(seed)
    sources = Source.objects.bulk_create(
        [
            Source(
                name=f"source-{i:04d}",
                kind=Source.Kind.OTHER,
                reliability=rng.betavariate(4, 2),
                reliability_answers=rng.randint(5, 50),
                reliability_updated_at=timezone.now(),
            )
            for i in range(n_sources)
        ]
    )
    subjects = [SUBJECT] + [f"AA-{1000 + k}-DFW-ORD" for k in range(n_flights - 1)]
    claims: list[Claim] = []
    truth: dict[tuple[str, str], str] = {}
    supporters: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    line = 1
    for subject in subjects:
        for attribute in ATTRIBUTES:
            true = f"{rng.randint(5, 22):02d}:{rng.choice((0, 10, 25, 40, 55)):02d}"
            wrong = [f"{rng.randint(5, 22):02d}:{rng.choice((5, 15, 30, 45, 50)):02d}" for _ in range(5)]
            truth[(subject, attribute)] = true
            for source in sources:
                line += 1
                value = true if rng.random() < 0.7 else rng.choice(wrong)
                supporters[(subject, attribute)][value].append(source.pk)
                claims.append(
                    Claim(
                        source=source,
                        subject=subject,
                        attribute=attribute,
                        value=value,
                        raw_value=rng.choice(_raw_forms(value)),
                        normalizer="time",
                        method=Claim.Method.MAPPING,
                        provenance={"file": "flights.csv", "line": line, "field": attribute.replace(" ", "_")},
                    )
                )
    Claim.objects.bulk_create(claims, batch_size=5000)
    run = EstimationRun.objects.create(
        kind=EstimationRun.Kind.CLAIMS,
        state=EstimationRun.State.SUCCEEDED,
        params={"estimator": "iwmv"},
        converged=True,
        iterations=5,
        finished_at=timezone.now(),
    )
    resolutions = []
    for (subject, attribute), by_value in supporters.items():
        total = sum(len(v) for v in by_value.values())
        ordered = sorted(by_value.items(), key=lambda kv: (kv[0] != truth[(subject, attribute)], -len(kv[1])))
        resolutions.append(
            ClaimResolution(
                run=run,
                subject=subject,
                attribute=attribute,
                value=ordered[0][0],
                confidence=len(ordered[0][1]) / total,
                claims=total,
                conflicting=len(ordered) > 1,
                values=[{"value": v, "sources": ids, "share": len(ids) / total} for v, ids in ordered],
            )
        )
    ClaimResolution.objects.bulk_create(resolutions)
    return {"sources": len(sources), "claims": len(claims), "items": len(resolutions)}


def timed(client: Client, url: str, repeat: int) -> dict[str, object]:
    """Median, min and max wall milliseconds of ``repeat`` requests after three warm-ups, and
    the SQL queries of one request."""
    from django.db import connection

    for _ in range(3):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    queries: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):  # (Django resets connection.queries at each request)
        client.get(url)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    return {
        "url": url,
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "queries": len(queries),
        "bytes": len(response.content),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=900)
    parser.add_argument("--flights", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    setup_django()

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client
    from django.urls import reverse

    from core.roles import ANALYST
    from core.services.pages.claim_conflict import conflict_view
    from core.views.claim_charts import conflict_url, subject_url

    started = time.perf_counter()
    counts = build(args.sources, args.flights)
    build_seconds = time.perf_counter() - started
    user = get_user_model().objects.create_user("bench-analyst", password="unused-password-bench")
    user.groups.add(Group.objects.get_or_create(name=ANALYST)[0])
    client = Client()
    client.force_login(user)

    page = timed(client, conflict_url(SUBJECT, ATTRIBUTE), args.repeat)
    service = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        conflict_view(SUBJECT, ATTRIBUTE)
        service.append((time.perf_counter() - start) * 1000)
    others = {
        "subject": timed(client, subject_url(SUBJECT), args.repeat),
        "browser": timed(client, reverse("claim-list") + "?q=AA-3859", args.repeat),
        "browser_unfiltered": timed(client, reverse("claim-list"), args.repeat),
        "source_list": timed(client, reverse("source-list"), args.repeat),
        "conflicts_claims_mode": timed(client, reverse("conflicts") + "?mode=claims", args.repeat),
    }
    result = {
        "data": {**counts, "claims_on_item": args.sources, "build_seconds": round(build_seconds, 1)},
        "conflict_page": page,
        "conflict_service_median_ms": round(statistics.median(service), 1),
        "other_pages": others,
        "goal_ms": 200,
        "python": sys.version.split()[0],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{counts['sources']} sources, {counts['claims']} claims, {counts['items']} items "
        f"(built in {build_seconds:.1f} s); the item {SUBJECT} / {ATTRIBUTE} has {args.sources} claims"
    )
    print(
        f"claim conflict page: median {page['median_ms']} ms over {args.repeat} requests "
        f"(min {page['min_ms']}, max {page['max_ms']}), {page['queries']} SQL queries, {page['bytes']:,} bytes"
    )
    print(f"  of which the service (queries + MultiRAG scoring): median {result['conflict_service_median_ms']} ms")
    for name, r in others.items():
        print(f"{name}: median {r['median_ms']} ms, {r['queries']} SQL queries")


if __name__ == "__main__":
    main()
