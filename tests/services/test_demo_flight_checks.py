"""The demo's flights settled by a curator's checks without a browser (issue 37): the same path
as `tests/browser/test_claim_checks.py` (load the demo's claims, run the claims estimation,
answer the checks page's first check three times by choosing the offered right value), so a
change to the checks' choice or to how the page offers values is caught on every machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.bench.paths import default_data_dir
from core.bench.truth import load_flights_gold
from core.engine.claims.mapping import ClaimMapping
from core.models import EstimationRun
from core.services.estimation import start_claim_run
from core.services.estimation.checks import identification_view, record_check
from core.services.pages.copying import dependence_groups
from sources.claim_loading import load_claims
from sources.models import Source
from tasks.engine_tasks import claim_estimation
from tests.helpers import as_list

DEMO = Path(__file__).resolve().parents[2] / "sources" / "demo_data"
COPIERS = ("flightview", "panynj", "foxbusiness")
TRACKERS = ("flights", "flightstats")

pytestmark = pytest.mark.skipif(
    not (default_data_dir() / "flights" / "clean.csv").is_file(), reason="the shared Flights gold is not here"
)


def run_here(run: EstimationRun) -> EstimationRun:
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    run.refresh_from_db()
    return run


def test_three_offered_checks_settle_the_demo_flights_and_name_the_copiers(db: None) -> None:
    mapping = ClaimMapping.from_json(json.loads((DEMO / "flights-mapping.json").read_text()))
    load_claims([("flights.csv", (DEMO / "flights.csv").read_bytes())], mapping)
    gold = load_flights_gold(default_data_dir())
    run = run_here(start_claim_run(estimator="accucopy"))
    assert run.identification["identified"] is False
    for k in range(3):
        view = identification_view(run)
        assert view is not None
        check = as_list(view["checks"])[0]
        subject, attribute = str(check["question"]).split(": ", 1)
        right = gold[(subject, attribute)]
        offered = [o["answer"] for o in check["answers"]]
        assert right in offered, f"the right value {right} of {subject} / {attribute} is not offered: {offered}"
        assert record_check(run, check["query_id"], right) is True, k
        run.refresh_from_db()  # the re-estimate's job
        run = run_here(run)
    assert run.identification["identified"] is True
    groups = [sorted(m["name"] for m in g["members"]) for g in dependence_groups(run) if not g["unsettled"]]
    named = {name for group in groups for name in group}
    assert set(COPIERS) <= named
    assert not named & set(TRACKERS)
    reliability: dict[str, float] = {}
    for name, estimate in Source.objects.filter(name__in=(*COPIERS, *TRACKERS)).values_list("name", "reliability"):
        assert estimate is not None, f"the run estimated {name}"
        reliability[name] = estimate
    assert min(reliability[n] for n in TRACKERS) > max(reliability[n] for n in COPIERS)
