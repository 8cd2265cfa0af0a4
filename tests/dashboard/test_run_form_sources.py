"""The run form names its sources: some of them, or the explicit "every active source"
option. Submitting it with none chosen starts nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core.models import EstimationRun
from tests.dashboard.helpers import World
from tests.factories import SourceFactory


def test_a_curator_submitting_no_source_starts_no_run_and_is_asked_to_choose(curator_client: Any, world: Any) -> None:
    SourceFactory(name="holds-documents", chunk_count=4)
    before = EstimationRun.objects.count()
    response = curator_client.post(reverse("run-start"), {"query_set": world.query_set.pk})
    assert response.status_code == 400
    assert "Choose the sources" in response.content.decode()
    assert EstimationRun.objects.count() == before


def test_the_every_active_source_option_starts_a_run_over_all_active_sources(
    curator_client: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, Any] = {}

    def fake_start(**kwargs: Any) -> EstimationRun:
        started.update(kwargs)
        return world.runs[0]

    monkeypatch.setattr("core.services.estimation.start_estimation_run", fake_start)
    form = curator_client.get(reverse("run-list")).content.decode()
    assert '<option value="all"' in form and "Every active source with documents" in form
    response = curator_client.post(reverse("run-start"), {"query_set": world.query_set.pk, "sources": ["all"]})
    assert response.status_code == 302
    assert started["sources"] == "all"
