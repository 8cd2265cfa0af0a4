"""The API lists every group of sources a run leaves unsettled, each with its sources, for
claim runs as for text runs (issue 37)."""

from __future__ import annotations

from typing import Any

from tests.factories import EstimationRunFactory, SourceFactory
from tests.unsettled_blocs import FEED, HONEST, unsettled_claim_run


def test_a_claim_runs_unsettled_groups_are_listed_with_their_sources(db: None, as_analyst: Any) -> None:
    run, sources = unsettled_claim_run()
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert body["identification"]["identified"] is False
    named = sorted(sorted(s["name"] for s in bloc) for bloc in body["unsettled_blocs"])
    assert named == sorted([sorted(FEED), sorted(HONEST)])
    # The stored identification lists the same groups by source id.
    ids = sorted(sorted(bloc) for bloc in body["identification"]["unsettled_blocs"])
    assert ids == sorted(sorted(sources[n].pk for n in group) for group in (FEED, HONEST))


def test_a_text_runs_unsettled_groups_are_listed_and_an_identified_run_has_none(db: None, as_analyst: Any) -> None:
    a, b, c, d = (SourceFactory(name=n) for n in ("wire", "forum", "blog", "farm"))
    run = EstimationRunFactory(
        succeeded=True,
        identification={"identified": False, "reason": "groups", "unsettled_blocs": [[a.pk, b.pk], [c.pk, d.pk]]},
    )
    body = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert body["unsettled_blocs"] == [
        [{"id": a.pk, "name": "wire"}, {"id": b.pk, "name": "forum"}],
        [{"id": c.pk, "name": "blog"}, {"id": d.pk, "name": "farm"}],
    ]
    settled = EstimationRunFactory(succeeded=True, identification={"identified": True, "reason": "ok"})
    assert as_analyst.get(f"/api/estimation-runs/{settled.pk}/").json()["unsettled_blocs"] == []
