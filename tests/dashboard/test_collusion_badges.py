"""Collusion that stands out: the conflicts page opens on the run that covered the most
sources; a pair is shown as copying only with false answers in common; the sources list and a
source's page say which sources it copies or colludes with."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.urls import reverse
from django.utils import timezone

from core.models import EstimationRun
from tests.factories import (
    EstimationRunFactory,
    FactQueryFactory,
    RunResponseFactory,
    SourceDependenceFactory,
    SourceFactory,
)


def finished_run(sources: list[Any], age_days: int) -> EstimationRun:
    """A finished accucopy run over ``sources`` in which they all answered one shared query."""
    when = timezone.now() - dt.timedelta(days=age_days)
    run = EstimationRunFactory(succeeded=True, sources=sources, params={"estimator": "accucopy"}, finished_at=when)
    EstimationRun.objects.filter(pk=run.pk).update(created_at=when)
    query = FactQueryFactory(query_set=run.query_set)
    for source in sources:
        RunResponseFactory(run=run, query=query, source=source)
    return run


def test_the_conflicts_page_opens_on_the_run_that_covered_the_most_sources(analyst_client: Any, db: Any) -> None:
    sources = [SourceFactory(name=f"s{i}") for i in range(6)]
    wide = finished_run(sources, age_days=2)
    small = finished_run(sources[:3], age_days=1)  # newer, but over three sources only
    page = analyst_client.get(reverse("conflicts")).content.decode()
    assert f'<option value="{wide.pk}" selected' in page and small.pk != wide.pk


def test_a_pair_is_shown_as_copying_only_with_false_answers_in_common(analyst_client: Any, db: Any) -> None:
    farm, trending, wire, desk = (SourceFactory(name=n) for n in ("farm", "trending", "wire", "desk"))
    run = finished_run([farm, trending, wire, desk], age_days=1)
    SourceDependenceFactory(run=run, source_a=farm, source_b=trending, probability=0.97, same_false=6.0)
    # Dependent by the estimator's reckoning, but on true answers alone: no evidence of collusion.
    SourceDependenceFactory(run=run, source_a=wire, source_b=desk, probability=0.9, same_false=0.2, same_true=9.0)
    page = re.sub(r"<[^>]+>", "", analyst_client.get(reverse("conflicts"), {"run": run.pk}).content.decode())
    assert "Copier pair: farm, trending" in page and "wire, desk" not in page and "desk – wire" not in page

    listing = analyst_client.get(reverse("source-list")).content.decode()
    badges = [line for line in listing.splitlines() if "collusion-badge" in line]
    assert len(badges) == 2 and all("copies with" in b for b in badges)
    assert any(">copies with trending</a>" in b for b in badges) and not any("wire" in b for b in badges)

    detail = analyst_client.get(reverse("source-detail", args=[farm.pk])).content.decode()
    assert 'id="source-collusion"' in detail and "<strong>trending</strong>" in detail
    assert "share 6 false answers" in detail
    assert 'id="source-collusion"' not in analyst_client.get(reverse("source-detail", args=[wire.pk])).content.decode()


def test_a_group_from_a_run_agreement_does_not_settle_is_shown_unsettled_never_as_copiers(
    analyst_client: Any, db: Any
) -> None:
    """With a colluding majority the estimate follows the colluders, and the group its copy
    detection finds (sources sharing answers it rejects) is the honest one: calling them
    copiers would accuse the wrong sources. An unidentified run shows the group as unsettled."""
    honest_a, honest_b, x, y, z = (SourceFactory(name=n) for n in ("honest-a", "honest-b", "x", "y", "z"))
    run = finished_run([honest_a, honest_b, x, y, z], age_days=1)
    EstimationRun.objects.filter(pk=run.pk).update(
        identification={"identified": False, "reason": "groups", "dissent_bloc": [honest_a.pk, honest_b.pk]}
    )
    SourceDependenceFactory(run=run, source_a=honest_a, source_b=honest_b, probability=0.99, same_false=8.0)

    page = re.sub(r"<[^>]+>", "", analyst_client.get(reverse("conflicts"), {"run": run.pk}).content.decode())
    assert "Group that agrees against the estimate (2 sources, unsettled): honest-a, honest-b" in page
    assert "Copier pair" not in page and "rests on which group of sources is right" in page

    listing = analyst_client.get(reverse("source-list")).content.decode()
    badges = [line for line in listing.splitlines() if "collusion-badge" in line]
    assert len(badges) == 2 and all("unsettled group with" in b and "copies with" not in b for b in badges)

    detail = analyst_client.get(reverse("source-detail", args=[honest_a.pk])).content.decode()
    assert 'id="source-collusion"' in detail and "unsettled" in detail and "false answer" not in detail

    result = analyst_client.get(reverse("run-result", args=[run.pk])).content.decode()
    assert "agrees against the estimate: unsettled" in result and "copier pair" not in result

    # Once checks settle the run, the same pair is copying.
    EstimationRun.objects.filter(pk=run.pk).update(identification={"identified": True, "reason": "checked"})
    assert "Copier pair: honest-a, honest-b" in re.sub(
        r"<[^>]+>", "", analyst_client.get(reverse("conflicts"), {"run": run.pk}).content.decode()
    )
