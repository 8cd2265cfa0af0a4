"""Claim-level estimation runs: resolving every (subject, attribute) of stored claims, the
sources' reliability from their claims, copying between sources, and the run as a job."""

from __future__ import annotations

from typing import Any

import pytest
from celery.worker import WorkController
from django.core.exceptions import ValidationError
from django.urls import reverse

from core.models import ClaimResolution, EstimationRun, ReliabilityScore, SourceDependence
from core.services.estimation import (
    refuse_gold_update,
    resume_claim_run,
    run_claim_estimation,
    start_claim_run,
)
from core.services.pages.runs import run_changes
from sources.models import Claim, Source
from tasks.engine_tasks import claim_estimation
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.factories import ClaimFactory, ReliabilityScoreFactory, SourceFactory
from tests.helpers import as_list

RELIABLE = ("almanac", "atlas", "gazette", "registry")
ITEMS = 20
COPIED = range(0, 8)  # copycat and echo claim the same false capital of these countries
RUMOURED = range(10, 18)  # rumours claims a false capital of its own for these


def truth(i: int) -> str:
    return f"city-{i}"


def build_claims() -> dict[str, Source]:
    """Twenty countries' capitals: four reliable sources always right, two copiers sharing
    false values on eight countries, and a rumour mill wrong on eight others."""
    sources = {name: SourceFactory(name=name) for name in (*RELIABLE, "copycat", "echo", "rumours")}
    for i in range(ITEMS):
        subject = f"country-{i:02d}"
        for name in RELIABLE:
            ClaimFactory(source=sources[name], subject=subject, attribute="capital", value=truth(i))
        for name in ("copycat", "echo"):
            ClaimFactory(
                source=sources[name],
                subject=subject,
                attribute="capital",
                value=f"fake-{i}" if i in COPIED else truth(i),
            )
        ClaimFactory(
            source=sources["rumours"],
            subject=subject,
            attribute="capital",
            value=f"rumour-{i}" if i in RUMOURED else truth(i),
        )
    return sources


def run_here(run: EstimationRun) -> EstimationRun:
    """The run's job, run in this process (the test's transaction never commits, so nothing was sent)."""
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    run.refresh_from_db()
    return run


def test_a_claim_run_resolves_every_item_and_scores_the_sources_from_their_claims(db: None) -> None:
    sources = build_claims()
    run = run_here(start_claim_run(estimator="iwmv"))
    assert (run.kind, run.state, run.converged) == (EstimationRun.Kind.CLAIMS, EstimationRun.State.SUCCEEDED, True)
    assert run.query_set is None and run.params == {"estimator": "iwmv", "attributes": None}
    assert set(run.sources.all()) == set(sources.values())
    assert run.iterations >= 1 and run.finished_at is not None
    assert run.job_id is not None
    job = Job.objects.get(pk=run.job_id)
    assert (job.state, job.kind, job.progress_total, job.percent) == ("succeeded", "estimate", 3, 100)
    assert job.result["items"] == ITEMS and job.result["claims"] == ITEMS * 7 and job.result["sources"] == 7
    assert job.result["conflicting"] == len(COPIED) + len(RUMOURED)

    resolved = {r.subject: r for r in ClaimResolution.objects.filter(run=run)}
    assert {s: r.value for s, r in resolved.items()} == {f"country-{i:02d}": truth(i) for i in range(ITEMS)}
    assert {s for s, r in resolved.items() if r.conflicting} == {f"country-{i:02d}" for i in (*COPIED, *RUMOURED)}
    assert all(r.claims == 7 for r in resolved.values())
    # The resolved value first, with the ids of the sources behind it.
    copied = resolved["country-00"].values
    assert [v["value"] for v in copied] == [truth(0), "fake-0"]
    assert copied[0]["sources"] == sorted(sources[n].pk for n in RELIABLE + ("rumours",))
    assert copied[1]["sources"] == sorted((sources["copycat"].pk, sources["echo"].pk))
    assert copied[0]["share"] > copied[1]["share"] > 0

    # Confidence: unanimous items above those one source disputes, above those two dispute.
    confidence = {s: r.confidence for s, r in resolved.items()}
    unanimous = [confidence[f"country-{i:02d}"] for i in range(ITEMS) if i not in COPIED and i not in RUMOURED]
    one_against = [confidence[f"country-{i:02d}"] for i in RUMOURED]
    two_against = [confidence[f"country-{i:02d}"] for i in COPIED]
    assert min(unanimous) > max(one_against) and min(one_against) > max(two_against)

    scores = {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    assert set(scores) == set(sources)
    for name in RELIABLE:
        assert scores[name].reliability > scores["rumours"].reliability
        assert scores[name].weight > scores["rumours"].weight
        assert (scores[name].answers, scores[name].agreements) == (ITEMS, ITEMS)
    assert (scores["rumours"].answers, scores["rumours"].agreements) == (ITEMS, ITEMS - len(RUMOURED))
    assert scores["rumours"].low <= scores["rumours"].reliability <= scores["rumours"].high
    rumours = Source.objects.get(name="rumours")
    assert rumours.reliability == pytest.approx(scores["rumours"].reliability)
    assert (rumours.reliability_low, rumours.reliability_high) == (scores["rumours"].low, scores["rumours"].high)
    assert rumours.reliability_answers == ITEMS and rumours.reliability_updated_at is not None
    assert not SourceDependence.objects.filter(run=run).exists()  # iwmv does not detect copying


def test_a_copy_detecting_estimator_stores_the_copiers_with_their_shared_false_values(db: None) -> None:
    sources = build_claims()
    run = run_here(start_claim_run(estimator="accucopy"))
    pair = SourceDependence.objects.get(run=run, source_a=sources["copycat"], source_b=sources["echo"])
    assert pair.probability >= 0.5 and pair.shared == ITEMS and pair.same_false > 0
    assert pair.examples == [
        {"subject": f"country-{i:02d}", "attribute": "capital", "value": f"fake-{i}"} for i in list(COPIED)[:5]
    ]
    honest = SourceDependence.objects.filter(run=run, source_a=sources["almanac"], source_b=sources["atlas"]).first()
    assert honest is None or honest.probability < pair.probability
    assert run.job is not None
    assert run.job.result["dependent_pairs"] >= 1


def test_a_run_reads_only_the_chosen_sources_and_attributes(db):
    sources = build_claims()
    for name in ("atlas", "almanac"):
        ClaimFactory(source=sources[name], subject="country-00", attribute="population", value="12")
    with pytest.raises(ValidationError, match="hold no claims: rumours"):
        start_claim_run(source_ids=[sources["atlas"].pk, sources["rumours"].pk], attributes=["population"])
    run = start_claim_run(source_ids=[sources["atlas"].pk], estimator="iwmv", attributes=["population"])
    assert list(run.sources.all()) == [sources["atlas"]]
    summary = run_claim_estimation(run)
    assert (summary["items"], summary["claims"], summary["sources"]) == (1, 1, 1)
    assert list(ClaimResolution.objects.filter(run=run).values_list("attribute", "value")) == [("population", "12")]
    assert list(ReliabilityScore.objects.filter(run=run).values_list("source__name", flat=True)) == ["atlas"]


def test_a_run_without_claims_or_with_unknown_names_is_refused_and_nothing_is_stored(db):
    with pytest.raises(ValidationError) as refused:
        start_claim_run()
    assert "no claims" in refused.value.message_dict["claims"][0]
    sources = build_claims()
    empty = SourceFactory(name="empty")
    with pytest.raises(ValidationError) as refused:
        start_claim_run(source_ids=[sources["atlas"].pk, empty.pk])
    assert "empty" in refused.value.message_dict["sources"][0]
    with pytest.raises(ValidationError) as refused:
        start_claim_run(source_ids=[empty.pk])
    assert "hold no claims" in refused.value.message_dict["claims"][0]
    with pytest.raises(ValidationError) as refused:
        start_claim_run(estimator="oracle", attributes=["capital", "anthem"])
    assert "iwmv" in refused.value.message_dict["estimator"][0]  # it lists the known ones
    assert "anthem" in refused.value.message_dict["attributes"][0]
    assert not EstimationRun.objects.exists() and not Job.objects.exists()


def test_a_run_whose_claims_vanished_fails_with_its_job(db: None) -> None:
    build_claims()
    run = start_claim_run(estimator="iwmv")
    Claim.objects.all().delete()
    run = run_here(run)
    assert run.state == EstimationRun.State.FAILED and run.finished_at is not None
    assert run.job_id is not None
    job = Job.objects.get(pk=run.job_id)
    assert job.state == Job.State.FAILED and "no claims" in job.error
    assert not ClaimResolution.objects.filter(run=run).exists()
    assert not ReliabilityScore.objects.filter(run=run).exists()


def test_a_failed_claim_run_is_resumed_under_a_new_job_and_a_succeeded_one_only_to_reestimate(db: None) -> None:
    build_claims()
    run = start_claim_run(estimator="iwmv")
    with pytest.raises(ValidationError, match="still running"):
        resume_claim_run(run)
    assert run.job_id is not None
    Job.objects.filter(pk=run.job_id).update(state=Job.State.FAILED)
    EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.FAILED)
    first_job = run.job_id
    run = run_here(resume_claim_run(run))
    assert run.state == EstimationRun.State.SUCCEEDED and run.job_id != first_job
    with pytest.raises(ValidationError, match="already succeeded"):
        resume_claim_run(run)
    again = run_here(resume_claim_run(run, reestimate=True))
    assert ClaimResolution.objects.filter(run=again).count() == ITEMS  # replaced, not added to
    with pytest.raises(ValidationError, match="claim-level"):
        refuse_gold_update(run)


def test_a_claim_runs_changes_compare_it_with_the_previous_claim_run_only(db):
    build_claims()
    first = run_here(start_claim_run(estimator="iwmv"))
    ReliabilityScoreFactory(source=SourceFactory(name="wiki"))  # a full run in between, over other sources
    second = run_here(start_claim_run(estimator="onecoin"))
    changes = run_changes(second)
    assert changes["previous_run_id"] == first.pk
    assert {c["status"] for c in changes["sources"]} == {"changed"}
    assert run_changes(first)["previous_run_id"] is None


def test_the_run_pages_show_a_claim_run(db, analyst_client: Any):
    build_claims()
    run = run_here(start_claim_run(estimator="iwmv"))
    listing = analyst_client.get(reverse("run-list"))
    assert listing.status_code == 200
    assert f'href="{reverse("run-detail", args=[run.pk])}"'.encode() in listing.content
    assert b">claims</span>" in listing.content
    page = analyst_client.get(reverse("run-detail", args=[run.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Claim-level estimation" in html and 'id="claim-resolutions"' in html
    assert f"{ITEMS} items resolved, {len(COPIED) + len(RUMOURED)} of them with conflicting values" in html
    assert "country-0" in html  # the least confident conflicting items are listed
    assert "agreement-matrix" not in html
    assert analyst_client.get(reverse("run-result", args=[run.pk])).status_code == 286


def test_a_claim_run_runs_on_the_real_worker(worker: WorkController) -> None:
    build_claims()
    run = start_claim_run(estimator="iwmv")
    assert run.job_id is not None
    job = wait_for_job(run.job_id, timeout=120)
    assert job.state == Job.State.SUCCEEDED, job.error
    assert job.message.startswith(f"Resolved {ITEMS} items")
    run.refresh_from_db()
    assert run.state == EstimationRun.State.SUCCEEDED
    assert ClaimResolution.objects.filter(run=run).count() == ITEMS


def build_mirrored_bloc() -> dict[str, Source]:
    """Two accurate sites against three that publish one feed (wrong on twelve of thirty
    items): the feed outvotes the trackers, and agreement alone cannot say which side is right."""
    sources = {name: SourceFactory(name=name) for name in ("tracker-a", "tracker-b", "feed-1", "feed-2", "feed-3")}
    for i in range(30):
        subject = f"flight-{i:02d}"
        for name in ("tracker-a", "tracker-b"):
            ClaimFactory(source=sources[name], subject=subject, attribute="departure", value=truth(i))
        for name in ("feed-1", "feed-2", "feed-3"):
            ClaimFactory(
                source=sources[name], subject=subject, attribute="departure", value=f"late-{i}" if i < 12 else truth(i)
            )
    return sources


def test_an_unsettled_claim_run_says_so_and_a_checked_value_on_its_checks_page_settles_it(db, curator_client: Any):
    from core.services.estimation.checks import identification_view, record_check

    sources = build_mirrored_bloc()
    run = run_here(start_claim_run(estimator="accucopy"))
    stored = run.identification
    assert stored["identified"] is False and stored["claims"] is True
    assert set(stored["estimate_side"]) == {sources[f"feed-{k}"].pk for k in (1, 2, 3)}
    # Resolved by an equal vote (the majority), never amplified; every site one reliability.
    assert ClaimResolution.objects.get(run=run, subject="flight-00").value == "late-0"
    assert len(set(ReliabilityScore.objects.filter(run=run).values_list("reliability", flat=True))) == 1
    checks = stored["checks"]
    assert checks and set(checks) <= set(ClaimResolution.objects.filter(run=run).values_list("pk", flat=True))
    view = identification_view(run)
    assert view is not None
    check = as_list(view["checks"])[0]
    assert check["question"].endswith(": departure")
    assert {o["answer"] for o in check["answers"]} == {
        truth(int(check["question"][7:9])),
        f"late-{int(check['question'][7:9])}",
    }
    page = curator_client.get(reverse("run-checks", args=[run.pk]))
    assert page.status_code == 200 and "two groups of sites disagree" in page.content.decode()
    detail = curator_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert 'id="run-identification"' in detail and "Agreement alone does not settle this estimate" in detail
    assert f"They disagree on {len(stored['contested'])} item" in detail and 'id="run-checks-link"' in detail

    # Refused, naming the field, storing nothing: an item that is not a check, an empty value.
    with pytest.raises(ValidationError) as refused:
        record_check(run, -1, "12:00")
    assert "query" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        record_check(run, checks[0], "  ")
    assert "answer" in refused.value.message_dict
    run.refresh_from_db()
    assert "claim_gold" not in run.params

    row = ClaimResolution.objects.get(pk=checks[0])
    right = truth(int(row.subject.split("-")[1]))
    assert record_check(run, checks[0], f"  {right.upper()} ") is True  # typed: stored as the claims spell it
    run.refresh_from_db()
    assert run.params["claim_gold"] == [[row.subject, row.attribute, right]]
    run = run_here(run)
    assert run.state == EstimationRun.State.SUCCEEDED and run.identification["identified"] is True
    # The items keep their resolution rows: the other checks on the curator's page stay valid.
    assert ClaimResolution.objects.filter(run=run, pk__in=checks).count() == len(checks)
    resolved = dict(ClaimResolution.objects.filter(run=run).values_list("subject", "value"))
    assert resolved == {f"flight-{i:02d}": truth(i) for i in range(30)}
    scores = dict(ReliabilityScore.objects.filter(run=run).values_list("source__name", "reliability"))
    assert min(scores["tracker-a"], scores["tracker-b"]) > max(scores[f"feed-{k}"] for k in (1, 2, 3))
    # The checked value is on record per source: the API's gold accuracy reads it.
    checked = {s.source.name: (s.gold_answers, s.gold_agreements) for s in ReliabilityScore.objects.filter(run=run)}
    assert checked["tracker-a"] == checked["tracker-b"] == (1, 1)
    assert all(checked[f"feed-{k}"] == (1, 0) for k in (1, 2, 3))
