"""A tolerance the claim mapping declares (issue 37), end to end: claims loaded with a minute
of tolerance keep it; a claim run counts values a minute apart as one value (no conflict, the
source a minute off counted right) and two minutes apart as a conflict; the conflict page,
the subject page and the API show the same values and resolution as the run."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core.engine.claims.mapping import ClaimMapping
from core.models import ClaimResolution, EstimationRun, ReliabilityScore
from core.services.estimation import start_claim_run
from sources.claim_loading import load_claims
from sources.models import Claim, Source
from tasks.engine_tasks import claim_estimation

DEP = "actual departure time"


def mapping(tolerance: int | None) -> ClaimMapping:
    spec: dict[str, object] = {"field": "act_dep_time", "normalizer": "time"}
    if tolerance is not None:
        spec["tolerance"] = tolerance
    return ClaimMapping.from_json({"subject": "flight", "source": "src", "attributes": {DEP: spec}})


# Four sites on eight flights: they agree on F-0..F-5; on F-MIN "b" writes a minute less
# than the others; on F-TWO "d" writes two minutes more.
TIMES = {f"F-{i}": dict.fromkeys("abcd", f"{8 + i}:05 a.m.") for i in range(6)}
TIMES["F-MIN"] = {"a": "3:20 p.m.", "b": "3:19 p.m.", "c": "3:20 p.m.", "d": "3:20 p.m."}
TIMES["F-TWO"] = {"a": "3:20 p.m.", "b": "3:20 p.m.", "c": "3:20 p.m.", "d": "3:22 p.m."}
CSV = (
    "src,flight,act_dep_time\n"
    + "".join(f"{site},{flight},{time}\n" for flight, sites in TIMES.items() for site, time in sites.items())
).encode()


def load_and_run(tolerance: int | None) -> EstimationRun:
    load_claims([("flights.csv", CSV)], mapping(tolerance), format_name="csv")
    run = start_claim_run(estimator="accucopy")
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    run.refresh_from_db()
    assert run.state == EstimationRun.State.SUCCEEDED
    return run


def resolution(run: EstimationRun, flight: str) -> ClaimResolution:
    return ClaimResolution.objects.get(run=run, subject=flight, attribute=DEP)


def test_a_minute_of_tolerance_is_one_value_in_the_run_the_pages_and_the_api(
    db: None, analyst_client: Any, as_analyst: Any
) -> None:
    run = load_and_run(1)
    assert set(Claim.objects.values_list("tolerance", flat=True)) == {"1"}
    ids = dict(Source.objects.values_list("name", "id"))

    one = resolution(run, "F-MIN")
    assert (one.value, one.conflicting) == ("15:20", False)
    assert one.values == [
        {
            "value": "15:20",
            "sources": sorted(ids[s] for s in "abcd"),
            "share": one.values[0]["share"],
            "spellings": ["15:20", "15:19"],
        }
    ]
    two = resolution(run, "F-TWO")
    assert (two.value, two.conflicting) == ("15:20", True)
    assert [(v["value"], v["sources"]) for v in two.values] == [
        ("15:20", sorted(ids[s] for s in "abc")),
        ("15:22", [ids["d"]]),
    ]
    # "b" is a minute off on F-MIN: counted right; "d" is two minutes off on F-TWO: wrong.
    scores = {s.source.name: (s.agreements, s.answers) for s in ReliabilityScore.objects.filter(run=run)}
    assert scores["b"] == (8, 8) and scores["d"] == (7, 8)

    for flight, resolved in (("F-MIN", one), ("F-TWO", two)):
        page = analyst_client.get(reverse("claim-conflict"), {"subject": flight, "attribute": DEP})
        assert page.status_code == 200
        view = page.context["view"]
        assert [(v["value"], v["claims"]) for v in view["values"] if v["claims"]] == [
            (v["value"], len(v["sources"])) for v in resolved.values
        ]
        assert view["values"][0]["resolved"] and view["resolution"]["value"] == resolved.value
        claimed = {c["source_name"]: c for c in view["claims"]}
        assert claimed["b"]["resolved"] and claimed["b"]["value"] == ("15:19" if flight == "F-MIN" else "15:20")
        assert claimed["d"]["resolved"] is (flight == "F-MIN")
        assert view["group"]["answer"] == resolved.value

        api = as_analyst.get("/api/claim-groups/", {"subject": flight, "attribute": DEP})
        assert api.status_code == 200, api.content
        group = api.json()
        assert [(v["value"], v["claims"]) for v in group["values"]] == [
            (v["value"], len(v["sources"])) for v in resolved.values
        ]
        assert group["resolution"]["value"] == resolved.value
        assert group["resolution"]["conflicting"] is resolved.conflicting
        assert group["resolution"]["values"] == resolved.values
        assert group["confidence"]["answer"] == resolved.value

    subject = analyst_client.get(reverse("claim-subject"), {"subject": "F-MIN"})
    row = subject.context["view"]["attributes"][0]
    assert (row["values"], row["conflicting"], row["resolved"]) == (1, False, "15:20")


def test_without_a_tolerance_a_minute_apart_is_a_conflict(db: None, analyst_client: Any) -> None:
    run = load_and_run(None)
    assert set(Claim.objects.values_list("tolerance", flat=True)) == {""}
    one = resolution(run, "F-MIN")
    assert one.conflicting and [v["value"] for v in one.values] == ["15:20", "15:19"]
    page = analyst_client.get(reverse("claim-conflict"), {"subject": "F-MIN", "attribute": DEP})
    assert [v["value"] for v in page.context["view"]["values"]] == ["15:20", "15:19"]
    # Loading the same file with the tolerance updates the claims; the next run groups them.
    assert load_claims([("flights.csv", CSV)], mapping(1), format_name="csv").updated == len(TIMES) * 4
    assert not resolution(load_and_run(1), "F-MIN").conflicting


def test_the_checks_page_offers_values_within_the_tolerance_apart(db: None, curator_client: Any) -> None:
    # The run shows 3:20 p.m. and 3:19 p.m. as one value; a check asks for the exact one (the
    # estimate compares values exactly), so the checks page offers both, each with its sites.
    run = load_and_run(1)
    item = resolution(run, "F-MIN")
    assert [v["value"] for v in item.values] == ["15:20"]
    run.identification = {
        "identified": False,
        "reason": "Only the groups' sizes chose between them.",
        "estimate_side": [],
        "dissent_bloc": [],
        "unsettled_blocs": [],
        "contested": [item.pk],
        "checks": [item.pk],
    }
    run.save(update_fields=["identification"])
    page = curator_client.get(reverse("run-checks", args=[run.pk])).content.decode()
    assert 'name="answer" value="15:20"' in page and 'name="answer" value="15:19"' in page
    assert "— 3 sources: a, c, d" in page and "— 1 source: b" in page
