"""Starting estimation runs is for curators; analysts get 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core.models import EstimationRun
from tests.dashboard.helpers import World


def test_an_analyst_may_not_start_a_run(analyst_client: Any, world: Any) -> None:
    response = analyst_client.post(reverse("run-start"), {"query_set": world.query_set.pk})
    assert response.status_code == 403
    assert EstimationRun.objects.count() == 2


def test_an_analyst_does_not_see_the_start_form(analyst_client: Any, world: Any) -> None:
    assert b'id="run-form"' not in analyst_client.get(reverse("run-list")).content


def test_a_curator_sees_the_start_form(curator_client: Any, world: Any) -> None:
    assert b'id="run-form"' in curator_client.get(reverse("run-list")).content


def test_opening_the_start_address_leads_to_the_open_form_and_starts_nothing(curator_client: Any, world: Any) -> None:
    from core.models import EstimationRun

    runs = EstimationRun.objects.count()
    response = curator_client.get(reverse("run-start"))
    assert response.status_code == 302 and response["Location"] == reverse("run-list") + "?start=1#start-run"
    page = curator_client.get(response["Location"]).content.decode()
    assert '<details open id="start-run">' in page
    assert EstimationRun.objects.count() == runs
    assert curator_client.put(reverse("run-start")).status_code == 405


def test_anonymous_posts_are_sent_to_login(client: Any, world: Any) -> None:
    response = client.post(reverse("run-start"), {"query_set": world.query_set.pk})
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_a_curator_starts_a_run_and_is_sent_to_its_page(
    curator_client: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, Any] = {}

    def fake_start(**kwargs: Any) -> EstimationRun:
        started.update(kwargs)
        return world.runs[0]

    monkeypatch.setattr("core.services.estimation.start_estimation_run", fake_start)
    response = curator_client.post(
        reverse("run-start"),
        {
            "query_set": world.query_set.pk,
            "sources": [world.sources[0].pk, world.sources[1].pk, world.sources[2].pk],
            "k": "2",
            "tau": "0.2",
            "strict": "on",
        },
    )
    assert response.status_code == 302 and response["Location"] == reverse("run-detail", args=[world.runs[0].pk])
    assert started["query_set"] == world.query_set
    assert [s.pk for s in started["sources"]] == [s.pk for s in world.sources[:3]]
    assert started["params"] == {"k": 2, "tau": 0.2, "strict": True}


def test_the_services_validation_errors_are_shown(curator_client: Any, world: Any) -> None:
    # The world's sources hold no chunks, so the real service refuses them.
    response = curator_client.post(
        reverse("run-start"), {"query_set": world.query_set.pk, "sources": [world.sources[0].pk]}
    )
    assert response.status_code == 400
    assert b"hold no documents" in response.content


def test_a_prior_of_nan_infinity_or_beyond_a_float_is_a_400_page_naming_the_field(
    curator_client: Any, world: Any
) -> None:
    for value in ("nan", "inf", "1e400", "1e308"):
        response = curator_client.post(
            reverse("run-start"), {"query_set": world.query_set.pk, "sources": ["all"], "alpha": value}
        )
        assert response.status_code == 400
        assert b"alpha must be a number from 0 to 1000" in response.content
    assert EstimationRun.objects.count() == len(world.runs)
