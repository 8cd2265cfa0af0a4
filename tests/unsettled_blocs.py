"""A claim world whose claims run leaves two groups of sites unsettled (issue 37): four sites
that copy one feed (wrong on about 60% of the items) outvote both an accurate pair and a pair
that copies another feed (wrong on about 80%). Each pair shares values the estimate rejects,
and neither is outnumbered by independent sites, so the run is not identified and lists both
pairs in ``unsettled_blocs``. Shared by the page and the API tests."""

from __future__ import annotations

import numpy as np

from core.models import EstimationRun
from core.services.estimation import start_claim_run
from sources.models import Source
from tasks.engine_tasks import claim_estimation
from tests.factories import ClaimFactory, SourceFactory

COPIERS = ("copier-1", "copier-2", "copier-3", "copier-4")
HONEST = ("honest-1", "honest-2")
FEED = ("feed-1", "feed-2")
ITEMS = 60


def build_two_unsettled_pairs(seed: int = 0) -> dict[str, Source]:
    rng = np.random.default_rng(seed)
    sources = {name: SourceFactory(name=name) for name in (*COPIERS, *HONEST, *FEED)}
    for i in range(ITEMS):
        subject = f"flight-{i:02d}"
        copied = f"m{i}" if rng.random() < 0.6 else "true"
        fed = f"b{i}" if rng.random() < 0.8 else "true"
        values = {name: copied for name in COPIERS}
        values |= {name: "true" if rng.random() < 0.95 else f"x{i}{k}" for k, name in enumerate(HONEST)}
        values |= {name: fed for name in FEED}
        for name, value in values.items():
            ClaimFactory(source=sources[name], subject=subject, attribute="gate", value=value)
    return sources


def unsettled_claim_run() -> tuple[EstimationRun, dict[str, Source]]:
    """The world's claims run (accucopy), its job run in this process."""
    sources = build_two_unsettled_pairs()
    run = start_claim_run(estimator="accucopy")
    claim_estimation.apply(kwargs={"job_id": run.job_id})
    run.refresh_from_db()
    return run, sources
