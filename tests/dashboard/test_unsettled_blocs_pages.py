"""Every group of sources a run leaves unsettled is shown, each with its sources (issue 37): the
run page, the checks page and the claim pages listed only the first (``dissent_bloc``)."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse

from core.models import ClaimResolution
from tests.factories import EstimationRunFactory, SourceFactory
from tests.unsettled_blocs import FEED, HONEST, unsettled_claim_run


def listed_blocs(page: str) -> list[list[str]]:
    """The groups an "unsettled-blocs" list names, each as its sources' names."""
    found = re.search(r'<ul class="plain unsettled-blocs" id="unsettled-blocs">(.*?)</ul>', page, re.S)
    assert found, "no list of unsettled groups"
    return [
        sorted(re.findall(r'<a href="/sources/\d+/">([^<]+)</a>', item))
        for item in re.findall(r'<li class="unsettled-bloc">(.*?)</li>', found.group(1), re.S)
    ]


def test_a_text_runs_pages_name_every_unsettled_group(db: None, curator_client: Any) -> None:
    a, b, c, d, e = (SourceFactory(name=n) for n in ("wire", "forum", "blog", "farm", "digest"))
    run = EstimationRunFactory(
        succeeded=True,
        sources=[a, b, c, d, e],
        identification={
            "identified": False,
            "reason": "These reliabilities rest on which group of sources is right.",
            "estimate_side": [e.pk],
            "dissent_bloc": [a.pk, b.pk],
            "unsettled_blocs": [[a.pk, b.pk], [c.pk, d.pk]],
            "contested": [],
            "checks": [],
        },
    )
    detail = curator_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert 'id="run-identification"' in detail and "2 groups of sources each share answers it rejects" in detail
    assert listed_blocs(detail) == [["forum", "wire"], ["blog", "farm"]]
    checks = curator_client.get(reverse("run-checks", args=[run.pk])).content.decode()
    assert listed_blocs(checks) == [["forum", "wire"], ["blog", "farm"]]


def test_a_claim_runs_pages_name_both_unsettled_pairs(db: None, curator_client: Any, analyst_client: Any) -> None:
    run, _ = unsettled_claim_run()
    assert run.identification["identified"] is False
    expected = sorted([sorted(FEED), sorted(HONEST)])
    detail = curator_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Agreement alone does not settle this estimate" in detail
    assert sorted(listed_blocs(detail)) == expected
    checks = curator_client.get(reverse("run-checks", args=[run.pk])).content.decode()
    assert sorted(listed_blocs(checks)) == expected

    item = ClaimResolution.objects.filter(run=run).order_by("subject").first()
    assert item is not None
    pages = [
        reverse("claim-conflict") + f"?subject={item.subject}&attribute={item.attribute}",
        reverse("claim-subject") + f"?subject={item.subject}",
        reverse("claim-list"),
    ]
    for url in pages:
        page = analyst_client.get(url).content.decode()
        assert 'id="claims-unsettled"' in page and f'Claims run <a href="/runs/{run.pk}/">#{run.pk}</a>' in page, url
        assert sorted(listed_blocs(page)) == expected, url
        assert 'id="claims-checks-link"' not in page  # analysts read; curators check
    curator_page = curator_client.get(pages[0]).content.decode()
    assert f'href="/runs/{run.pk}/checks/" id="claims-checks-link"' in curator_page


def test_the_claims_note_says_how_an_unsettled_run_voted() -> None:
    from django.template.loader import render_to_string

    from core.engine.claims.resolve import CHECKED_VOTE_NOTE

    def note(reason: str) -> str:
        unsettled = {"run_id": 7, "reason": reason, "estimate_side": [], "unsettled_blocs": [], "checks": 0}
        return render_to_string("core/_claim_unsettled.html", {"unsettled": unsettled})

    plain = note("Only the groups' sizes chose between them.")
    assert "a majority vote (every site one equal vote)" in plain
    weighed = note("Only the groups' sizes chose." + CHECKED_VOTE_NOTE.format(n=2, values="checked values"))
    assert "(right + 1) / (checked + 2)" in weighed and "one equal vote" not in weighed


def test_a_run_unsettled_by_the_agreement_fit_names_the_overrated_sites_not_a_side(
    db: None, curator_client: Any
) -> None:
    # The agreement fit (issue 37) leaves no "side" the estimate follows: the group it names is
    # the sites rated higher than their agreement supports.
    from core.engine.reliability.identify import MISFIT_MESSAGE

    a, b, c = (SourceFactory(name=n) for n in ("pair-1", "pair-2", "airline"))
    run = EstimationRunFactory(
        succeeded=True,
        sources=[a, b, c],
        identification={
            "identified": False,
            "reason": MISFIT_MESSAGE.format(z=-2.4, pairs=31),
            "estimate_side": [],
            "dissent_bloc": [a.pk, b.pk],
            "unsettled_blocs": [[a.pk, b.pk]],
            "contested": [],
            "checks": [],
        },
    )
    detail = curator_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "agreement with the others fits their estimated reliability worst" in detail
    assert "The estimate follows <strong></strong>" not in detail
    assert listed_blocs(detail) == [["pair-1", "pair-2"]]
    assert "They disagree on" not in detail
    checks = curator_client.get(reverse("run-checks", args=[run.pk])).content.decode()
    assert "The checks below test these sources, whose agreement with the others fits" in checks
    assert "shares answers the estimate rejects" not in checks
    assert listed_blocs(checks) == [["pair-1", "pair-2"]]
    from django.template.loader import render_to_string

    unsettled = {
        "run_id": run.pk,
        "reason": MISFIT_MESSAGE.format(z=-2.4, pairs=31),
        "estimate_side": [],
        "unsettled_blocs": [],
        "checks": 0,
    }
    note = render_to_string("core/_claim_unsettled.html", {"unsettled": unsettled})
    assert "agreement with the other sites fits their estimated reliability worst" in note
    assert "The estimate follows" not in note
