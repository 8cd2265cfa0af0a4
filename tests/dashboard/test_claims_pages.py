"""The claims pages: the browser (all claims, one source's), a subject's attributes, one item's
conflict view with MultiRAG's confidences (checked against numbers computed by hand), the
conflicts page's claims mode, access control and escaping."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import EstimationRun
from core.services.pages.claim_conflict import conflict_view
from core.services.pages.conflicts import claim_source_pairs
from core.views.claim_charts import conflict_url, subject_url
from core.views.claims import cached_conflict_view
from sources.models import Claim, Source
from tests.factories import (
    ClaimFactory,
    ClaimResolutionFactory,
    EstimationRunFactory,
    SourceDependenceFactory,
    SourceFactory,
)

FLIGHT, OTHER = "UA-100", "DL-7"
ACT, SCHED = "actual departure time", "scheduled departure time"
RELIABILITY = {"alpha": 0.9, "bravo": 0.8, "charlie": 0.7, "delta": 0.6, "echo": 0.1}
HOSTILE = "<script>alert('x')</script>"


@dataclass
class ClaimWorld:
    sources: dict[str, Source]
    run: EstimationRun
    claims: dict[tuple[str, str, str], Claim] = field(default_factory=dict)


def claim(
    world: ClaimWorld, source: str, subject: str, attribute: str, value: str, raw: str = "", line: int = 2
) -> None:
    world.claims[(source, subject, attribute)] = ClaimFactory(
        source=world.sources[source],
        subject=subject,
        attribute=attribute,
        value=value,
        raw_value=raw or value,
        normalizer="time",
        provenance={"file": "dirty.csv", "line": line, "field": attribute.replace(" ", "_")},
    )


def resolution(
    world: ClaimWorld, subject: str, attribute: str, confidence: float, values: list[tuple[str, list[str], float]]
) -> None:
    ClaimResolutionFactory(
        run=world.run,
        subject=subject,
        attribute=attribute,
        value=values[0][0],
        confidence=confidence,
        values=[
            {"value": v, "sources": [world.sources[s].pk for s in who], "share": share} for v, who, share in values
        ],
    )


@pytest.fixture
def claim_world(db: Any) -> ClaimWorld:
    """Five sources of known reliability (each resting on 5 answers) and their claims on two flights.

    UA-100 actual departure: alpha, bravo, charlie, delta say 07:10, echo says 19:10 ("7:10 p.m.");
    UA-100 scheduled departure: alpha, bravo, charlie say 07:00 (no conflict);
    DL-7 actual departure: alpha 08:00, echo 09:00."""
    sources = {}
    for name, reliability in RELIABILITY.items():
        source = SourceFactory(name=name)
        Source.objects.filter(pk=source.pk).update(reliability=reliability, reliability_answers=5)
        source.refresh_from_db()
        sources[name] = source
    run = EstimationRunFactory(
        succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None, params={"estimator": "iwmv"}
    )
    world = ClaimWorld(sources=sources, run=run)
    for line, name in enumerate(("alpha", "bravo", "charlie", "delta"), start=2):
        claim(world, name, FLIGHT, ACT, "07:10", raw="7:10 a.m.", line=line)
    claim(world, "echo", FLIGHT, ACT, "19:10", raw="7:10 p.m.", line=6)
    for line, name in enumerate(("alpha", "bravo", "charlie"), start=2):
        claim(world, name, FLIGHT, SCHED, "07:00", raw="7:00 AM", line=line)
    claim(world, "alpha", OTHER, ACT, "08:00", line=9)
    claim(world, "echo", OTHER, ACT, "09:00", line=10)
    resolution(
        world, FLIGHT, ACT, 0.93, [("07:10", ["alpha", "bravo", "charlie", "delta"], 0.95), ("19:10", ["echo"], 0.05)]
    )
    resolution(world, FLIGHT, SCHED, 0.99, [("07:00", ["alpha", "bravo", "charlie"], 1.0)])
    resolution(world, OTHER, ACT, 0.61, [("08:00", ["alpha"], 0.61), ("09:00", ["echo"], 0.39)])
    return world


def html(response: Any) -> str:
    assert response.status_code == 200, response.status_code
    text: str = response.content.decode()
    return text


def rows_of(page: str, table_id: str) -> list[str]:
    """The body rows of the table with this id, as HTML strings."""
    match = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.S)
    assert match, f"no table #{table_id}"
    return re.findall(r"<tr.*?</tr>", match.group(1), re.S)


def row_with(page: str, table_id: str, text: str) -> str:
    found = [r for r in rows_of(page, table_id) if text in r]
    assert len(found) == 1, f"{len(found)} rows of #{table_id} contain {text!r}"
    return found[0]


# --- the browser ------------------------------------------------------------------------------


def test_the_browser_lists_claims_with_their_resolved_values(analyst_client: Any, claim_world: ClaimWorld) -> None:
    page = html(analyst_client.get(reverse("claim-list")))
    rows = rows_of(page, "claim-table")
    assert len(rows) == 10
    echo_row = row_with(page, "claim-table", "19:10")
    assert "claim-disagrees" in echo_row and "7:10 p.m." in echo_row  # raw form beside the normalised value
    assert "dirty.csv, line 6, field actual_departure_time" in echo_row
    agreeing = [r for r in rows if "07:10" in r and "claim-disagrees" not in r]
    assert len(agreeing) == 4


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"q": "DL-7"}, 2),  # subject
        ({"q": "19:10"}, 1),  # normalised value
        ({"q": "p.m."}, 1),  # raw value
        ({"attribute": SCHED}, 3),
        ({"attribute": ACT, "q": "ua-100"}, 5),
    ],
)
def test_the_browser_filters(
    analyst_client: Any, claim_world: ClaimWorld, params: dict[str, str], expected: int
) -> None:
    assert len(rows_of(html(analyst_client.get(reverse("claim-list"), params)), "claim-table")) == expected


def test_the_browser_filters_by_source(analyst_client: Any, claim_world: ClaimWorld) -> None:
    echo = claim_world.sources["echo"]
    page = html(analyst_client.get(reverse("claim-list"), {"source": echo.pk}))
    rows = rows_of(page, "claim-table")
    assert len(rows) == 2 and all("echo" in r for r in rows)


def test_the_browser_paginates(analyst_client: Any, claim_world: ClaimWorld) -> None:
    for i in range(30):
        ClaimFactory(source=claim_world.sources["delta"], subject=f"ZZ-{i:02d}", attribute=ACT, value="10:00")
    first = html(analyst_client.get(reverse("claim-list"), {"attribute": ACT}))
    assert len(rows_of(first, "claim-table")) == 25 and "Page 1 of 2" in first
    assert f"attribute={ACT.replace(' ', '+')}" in first  # the pager keeps the filter
    second = html(analyst_client.get(reverse("claim-list"), {"attribute": ACT, "page": 2}))
    assert len(rows_of(second, "claim-table")) == 37 - 25


def test_one_sources_claims(analyst_client: Any, claim_world: ClaimWorld) -> None:
    echo = claim_world.sources["echo"]
    page = html(analyst_client.get(reverse("source-claims", args=[echo.pk])))
    rows = rows_of(page, "claim-table")
    assert len(rows) == 2 and "Claims of echo" in page
    assert all("claim-disagrees" in r for r in rows)  # echo is outvoted on both items
    assert "alpha" not in "".join(rows)
    detail = html(analyst_client.get(reverse("source-detail", args=[echo.pk])))
    assert reverse("source-claims", args=[echo.pk]) in detail


def test_an_unknown_source_has_no_claims_page(analyst_client: Any, db: Any) -> None:
    assert analyst_client.get(reverse("source-claims", args=[999999])).status_code == 404


# --- one subject ---------------------------------------------------------------------------------


def test_the_subject_page_shows_every_attribute_with_its_resolved_value(
    analyst_client: Any, claim_world: ClaimWorld
) -> None:
    page = html(analyst_client.get(reverse("claim-subject"), {"subject": FLIGHT}))
    act = row_with(page, "attribute-table", ACT)
    assert "07:10" in act and "0.93" in act and "conflicting" in act
    assert re.search(r"<td>5</td>\s*<td>2 ", act)  # 5 sources, 2 values
    assert "0.60" in act  # MultiRAG's group confidence (12 agreeing ordered pairs of 20)
    assert conflict_url(FLIGHT, ACT).replace("&", "&amp;") in act
    sched = row_with(page, "attribute-table", SCHED)
    assert "07:00" in sched and "0.99" in sched and "conflicting" not in sched
    assert f'href="{reverse("run-detail", args=[claim_world.run.pk])}"' in page
    # The line graph: one node per claim, a hub per attribute, joined as a spanning tree (n - 1 edges).
    svg = re.search(r'<svg[^>]*id="claim-line-graph".*?</svg>', page, re.S)
    assert svg
    assert svg.group(0).count("<circle") == 8
    assert svg.group(0).count("<line") == 7


def test_the_subject_page_without_a_claims_run_shows_the_claims_unresolved(analyst_client: Any, db: Any) -> None:
    ClaimFactory(subject="lonely", attribute="colour", value="red")
    page = html(analyst_client.get(reverse("claim-subject"), {"subject": "lonely"}))
    row = row_with(page, "attribute-table", "colour")
    assert "not resolved" in row and "one claim" in row


def test_an_unknown_subject_answers_404(analyst_client: Any, claim_world: ClaimWorld) -> None:
    response = analyst_client.get(reverse("claim-subject"), {"subject": "nope"})
    assert response.status_code == 404 and b"No claim about" in response.content
    assert analyst_client.get(reverse("claim-subject")).status_code == 200  # the empty form


# --- one item: the conflict view ---------------------------------------------------------------------


def test_conflict_view_confidences_match_the_hand_computation(claim_world: ClaimWorld) -> None:
    """n = 5 claims, 4 say 07:10 and echo says 19:10; every source rests on H = 5 answers.

    Graph level: C(G) = (4*3 + 1*0) / (5*4) = 0.6 (>= 0.5: kept).
    Consistency: 3/4 = 0.75 for the 07:10 claims, 0/4 for echo's.
    Historical authority (H * r + sum of r behind the value) / (H + n): reliabilities behind 07:10
    sum to 3.0, so alpha (5*0.9 + 3) / 10 = 0.75, bravo 0.70, charlie 0.65, delta 0.60, and
    echo (5*0.1 + 0.1) / 10 = 0.06. Node confidence = consistency + authority: 1.50, 1.45,
    1.40, 1.35 (kept) and 0.06 (pruned at 0.7). MultiRAG's answer: the kept claims vote with
    their sources' log-odds voting weights (accucopy), max(0, ln(r / (1 - r))) + 0.001 r:
    alpha 2.1972 + 0.0009, bravo 1.3863 + 0.0008, charlie 0.8473 + 0.0007, delta 0.4055 + 0.0006,
    echo 0 + 0.0001; answer share = 4.8393 / 4.8394."""
    view = conflict_view(FLIGHT, ACT)
    assert view is not None
    assert view["group"]["confidence"] == pytest.approx(0.6)
    assert view["group"]["kept"] is True and view["group"]["answer"] == "07:10"
    assert view["group"]["answer_share"] == pytest.approx(4.8393 / 4.8394, abs=1e-5)
    confidence = {c["source_name"]: c["confidence"] for c in view["claims"]}
    assert confidence == pytest.approx({"alpha": 1.50, "bravo": 1.45, "charlie": 1.40, "delta": 1.35, "echo": 0.06})
    kept = {c["source_name"]: c["kept"] for c in view["claims"]}
    assert kept == {"alpha": True, "bravo": True, "charlie": True, "delta": True, "echo": False}
    assert [v["value"] for v in view["values"]] == ["07:10", "19:10"]
    assert view["values"][0]["share"] == 0.95 and view["values"][0]["resolved"]
    assert view["resolution"]["value"] == "07:10" and view["resolution"]["confidence"] == 0.93


def test_conflict_view_shows_each_value_its_sources_and_the_pruned_node(
    analyst_client: Any, claim_world: ClaimWorld
) -> None:
    page = html(analyst_client.get(conflict_url(FLIGHT, ACT)))
    assert re.search(r'id="resolved-value">07:10<', page)
    assert 'id="resolved-confidence">0.93<' in page
    assert 'id="group-confidence" class="good">0.600<' in page
    assert 'id="pruned-count" class="bad">1<' in page and 'id="kept-count">4<' in page
    right = row_with(page, "value-table", ">07:10<")
    assert "resolved" in right and "7:10 a.m." in right and "×4" in right
    for name in ("alpha", "bravo", "charlie", "delta"):
        assert f'>{name}</a> <span class="muted">({RELIABILITY[name]:.2f})' in right
    wrong = row_with(page, "value-table", ">19:10<")
    assert "7:10 p.m." in wrong and ">echo</a>" in wrong and "alpha" not in wrong
    echo = row_with(page, "claim-node-table", ">echo<")
    assert echo.startswith('<tr class="pruned">') and "0.06" in echo and "pruned" in echo
    assert "dirty.csv, line 6, field actual_departure_time" in echo
    alpha = row_with(page, "claim-node-table", ">alpha<")
    assert alpha.startswith('<tr class="kept">') and "<strong>1.50</strong>" in alpha and "0.75" in alpha


def test_a_group_below_the_graph_threshold_is_marked_pruned(analyst_client: Any, claim_world: ClaimWorld) -> None:
    # DL-7: two claims, two values: C(G) = 0 < 0.5.
    page = html(analyst_client.get(conflict_url(OTHER, ACT)))
    assert 'id="group-confidence" class="bad">0.000<' in page and "too much disagreement for MultiRAG" in page


def test_conflict_view_without_a_run_says_so(analyst_client: Any, db: Any) -> None:
    ClaimFactory(subject="S", attribute="a", value="1")
    ClaimFactory(subject="S", attribute="a", value="2")
    page = html(analyst_client.get(conflict_url("S", "a")))
    assert "not resolved yet" in page


def test_conflict_view_of_an_unknown_item_answers_404(analyst_client: Any, claim_world: ClaimWorld) -> None:
    assert analyst_client.get(conflict_url(FLIGHT, "colour")).status_code == 404
    # No item named: the claims browser, saying what to choose (not a bare 404).
    cut_short = analyst_client.get(reverse("claim-conflict"), {"subject": FLIGHT}, follow=True)
    assert cut_short.redirect_chain == [(reverse("claim-list"), 302)]
    assert "Choose an item (a subject and an attribute)" in cut_short.content.decode()
    # A run that does not parse is a 400 naming the parameter (it was a 404, as if no such run).
    refused = analyst_client.get(conflict_url(FLIGHT, ACT) + "&run=abc")
    assert refused.status_code == 400 and "run: Enter the number of a claims run." in refused.content.decode()


def test_conflict_view_uses_the_named_run(analyst_client: Any, claim_world: ClaimWorld) -> None:
    older = EstimationRunFactory(succeeded=True, kind=EstimationRun.Kind.CLAIMS, query_set=None)
    EstimationRun.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=3))
    ClaimResolutionFactory(run=older, subject=FLIGHT, attribute=ACT, value="19:10", confidence=0.51)
    assert 'id="resolved-value">07:10<' in html(analyst_client.get(conflict_url(FLIGHT, ACT)))  # the latest run
    page = html(analyst_client.get(conflict_url(FLIGHT, ACT) + f"&run={older.pk}"))
    assert 'id="resolved-value">19:10<' in page and 'id="resolved-confidence">0.51<' in page


def test_conflict_view_queries_do_not_grow_with_sources(
    analyst_client: Any, claim_world: ClaimWorld, django_assert_max_num_queries: Any
) -> None:
    # A cache miss both times (the new claims change the key): the page's queries plus the
    # cache key's aggregates and the database cache's read and write, independent of n.
    with django_assert_max_num_queries(16):
        html(analyst_client.get(conflict_url(FLIGHT, ACT)))
    for i in range(60):
        ClaimFactory(
            source=SourceFactory(name=f"extra-{i}"), subject=FLIGHT, attribute=ACT, value="07:10" if i % 3 else "07:15"
        )
    with django_assert_max_num_queries(16):
        page = html(analyst_client.get(conflict_url(FLIGHT, ACT)))
    assert len(rows_of(page, "claim-node-table")) == 65


# --- the conflicts page's claims mode ----------------------------------------------------------------


def test_conflicts_claims_mode_lists_contested_items_most_contested_first(
    analyst_client: Any, claim_world: ClaimWorld
) -> None:
    page = html(analyst_client.get(reverse("conflicts"), {"mode": "claims"}))
    rows = rows_of(page, "contested-items")
    assert len(rows) == 2  # the scheduled departure is not contested
    assert OTHER in rows[0] and "0.61" in rows[0]  # lowest confidence first
    assert FLIGHT in rows[1] and "0.93" in rows[1] and "19:10" in rows[1]
    assert conflict_url(FLIGHT, ACT).replace("&", "&amp;") in rows[1]
    assert 'class="active" aria-current="page">Claims<' in page
    assert 'id="conflict-graph"' in page


def test_claims_mode_source_pairs_count_shared_items_and_disagreements(claim_world: ClaimWorld) -> None:
    found = claim_source_pairs(claim_world.run)
    ids = {s.pk: name for name, s in claim_world.sources.items()}
    ordered = {(ids[p["source_a"]], ids[p["source_b"]]): (p["shared"], p["disagreements"]) for p in found["pairs"]}
    pairs = {(min(k), max(k)): v for k, v in ordered.items()}  # each pair's names in sorted order
    assert pairs[("alpha", "echo")] == (2, 2)  # UA-100 and DL-7, different values on both
    assert pairs[("alpha", "bravo")] == (2, 0)  # both UA-100 attributes, agreeing
    assert pairs[("bravo", "delta")] == (1, 0)
    assert pairs[("delta", "echo")] == (1, 1)
    assert len(pairs) == 10  # every pair of the five shares UA-100's actual departure
    assert found["items"] == 3 and found["total_sources"] == 5


def test_claims_mode_keeps_the_graph_to_the_sources_with_most_claims(claim_world: ClaimWorld) -> None:
    # alpha has 3 claims; bravo, charlie and echo 2 (ties: the older source); delta 1.
    found = claim_source_pairs(claim_world.run, top=2)
    assert [s["name"] for s in found["sources"]] == ["alpha", "bravo"]
    assert [(p["source_a_name"], p["source_b_name"], p["shared"]) for p in found["pairs"]] == [("alpha", "bravo", 2)]


def test_claims_mode_shows_the_runs_copying_groups(analyst_client: Any, claim_world: ClaimWorld) -> None:
    SourceDependenceFactory(
        run=claim_world.run,
        source_a=claim_world.sources["delta"],
        source_b=claim_world.sources["echo"],
        probability=0.97,
    )
    page = html(analyst_client.get(reverse("conflicts"), {"mode": "claims"}))
    assert "Copier pair" in page and "probability 0.97" in page


def test_claims_mode_without_a_claims_run(analyst_client: Any, db: Any) -> None:
    page = html(analyst_client.get(reverse("conflicts"), {"mode": "claims"}))
    assert "No claims run has finished yet" in page


def test_claims_mode_queries_are_bounded(
    analyst_client: Any, claim_world: ClaimWorld, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(12):
        html(analyst_client.get(reverse("conflicts"), {"mode": "claims"}))


def test_answers_mode_links_to_claims_mode(analyst_client: Any, db: Any) -> None:
    page = html(analyst_client.get(reverse("conflicts")))
    assert f'href="{reverse("conflicts")}?mode=claims"' in page


# --- navigation, access control, escaping ------------------------------------------------------------


def _claim_pages(world: ClaimWorld) -> list[str]:
    return [
        reverse("claim-list"),
        reverse("source-claims", args=[world.sources["echo"].pk]),
        f"{reverse('claim-subject')}?subject={FLIGHT}",
        conflict_url(FLIGHT, ACT),
        f"{reverse('conflicts')}?mode=claims",
    ]


def test_the_nav_links_to_the_claims(analyst_client: Any, claim_world: ClaimWorld) -> None:
    for url in _claim_pages(claim_world)[:4]:
        page = html(analyst_client.get(url))
        assert f'<a href="{reverse("claim-list")}" class="active">Claims</a>' in page, url


def test_a_user_without_a_role_is_refused(nobody_client: Any, claim_world: ClaimWorld) -> None:
    for url in _claim_pages(claim_world):
        assert nobody_client.get(url).status_code == 403, url


def test_anonymous_visitors_are_sent_to_the_login_page(client: Any, claim_world: ClaimWorld) -> None:
    for url in _claim_pages(claim_world):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_a_curator_sees_the_claims_pages(curator_client: Any, claim_world: ClaimWorld) -> None:
    for url in _claim_pages(claim_world):
        assert curator_client.get(url).status_code == 200, url


def test_hostile_values_are_escaped(analyst_client: Any, claim_world: ClaimWorld) -> None:
    echo = claim_world.sources["echo"]
    ClaimFactory(source=echo, subject=HOSTILE, attribute=HOSTILE, value=HOSTILE, raw_value=HOSTILE + "<b>raw</b>")
    ClaimFactory(
        source=claim_world.sources["alpha"], subject=HOSTILE, attribute=HOSTILE, value="<img src=x onerror=alert(1)>"
    )
    ClaimResolutionFactory(
        run=claim_world.run,
        subject=HOSTILE,
        attribute=HOSTILE,
        value=HOSTILE,
        confidence=0.2,
        values=[
            {"value": HOSTILE, "sources": [echo.pk], "share": 0.6},
            {"value": "<img src=x onerror=alert(1)>", "sources": [claim_world.sources["alpha"].pk], "share": 0.4},
        ],
    )
    for url in (
        f"{reverse('claim-list')}?q=script",
        reverse("source-claims", args=[echo.pk]),
        subject_url(HOSTILE),
        conflict_url(HOSTILE, HOSTILE),
        f"{reverse('conflicts')}?mode=claims",
    ):
        page = html(analyst_client.get(url))
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>raw" not in page, url
        assert "&lt;script&gt;alert(" in page, url


def test_the_conflict_view_is_cached_until_its_claims_or_sources_change(
    claim_world: ClaimWorld, django_assert_max_num_queries: Any
) -> None:
    first = cached_conflict_view(FLIGHT, ACT)
    assert first is not None
    # What is cached is the page's whole view: its links and its value graph too.
    assert first["subject_url"] == subject_url(FLIGHT) and first["graph"] is not None
    alpha_id = claim_world.sources["alpha"].pk
    assert {c["source_url"] for c in first["claims"] if c["source_id"] == alpha_id} == {
        reverse("source-detail", args=[alpha_id])
    }
    # A second view of the unchanged item reads only the cache key's aggregates and the cache.
    with django_assert_max_num_queries(4):
        again = cached_conflict_view(FLIGHT, ACT)
    assert again == first
    echo = Claim.objects.get(subject=FLIGHT, attribute=ACT, source=claim_world.sources["echo"])
    echo.value, echo.raw_value = "07:10", "7:10 a.m."
    echo.save()
    changed = cached_conflict_view(FLIGHT, ACT)
    assert changed is not None and [v["value"] for v in changed["values"]][0] == "07:10"
    assert changed["group"]["confidence"] == pytest.approx(1.0)  # every claim now agrees
    Source.objects.filter(pk=claim_world.sources["alpha"].pk).update(
        reliability=0.2, reliability_updated_at=timezone.now() + timedelta(seconds=1)
    )
    rerated = cached_conflict_view(FLIGHT, ACT)
    assert rerated is not None
    alpha = next(c for c in rerated["claims"] if c["source_name"] == "alpha")
    assert alpha["reliability"] == 0.2
