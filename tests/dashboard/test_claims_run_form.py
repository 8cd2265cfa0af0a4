"""A curator starts a claim-level run from the run list, reached from the claims browser; the
text run's source chooser offers only sources with documents."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core.models import EstimationRun
from tasks.models import Job
from tests.factories import ClaimFactory, JobFactory, SourceFactory


def test_a_curator_resolves_the_claims_from_the_run_list(curator_client: Any, db: Any, monkeypatch: Any) -> None:
    sent: list[str] = []

    def dispatch_job(**kwargs: Any) -> Job:
        sent.append(kwargs["task_name"])
        return JobFactory()

    monkeypatch.setattr("core.services.estimation.claim_runs.dispatch_job", dispatch_job)
    site_a, site_b = SourceFactory(name="site-a", chunk_count=0), SourceFactory(name="site-b", chunk_count=0)
    ClaimFactory(source=site_a, subject="AA-1", attribute="actual departure time", value="07:16")
    ClaimFactory(source=site_b, subject="AA-1", attribute="actual departure time", value="07:02")
    documents = SourceFactory(name="with-documents", chunk_count=3)

    # The browser says nothing is resolved and links the curator to the form.
    browser = curator_client.get(reverse("claim-list")).content.decode()
    assert 'id="start-claims-run-link"' in browser
    page = curator_client.get(reverse("run-list") + "?start=1").content.decode()
    assert 'id="claims-run-form"' in page and "the 2 claims loaded" in page
    # The text run's chooser lists sources it can ask: those with documents.
    chooser = page.split('id="id_sources"', 1)[1].split("</select>", 1)[0]
    assert "with-documents" in chooser and "site-a" not in chooser and documents.pk

    response = curator_client.post(reverse("run-start-claims"), {"estimator": "accucopy"})
    run = EstimationRun.objects.get(kind=EstimationRun.Kind.CLAIMS)
    assert response.status_code == 302 and response["Location"] == reverse("run-detail", args=[run.pk])
    assert set(run.sources.values_list("name", flat=True)) == {"site-a", "site-b"}
    assert run.params["estimator"] == "accucopy" and sent == ["tasks.claim_estimation"]


def test_without_claims_the_form_says_what_to_load_and_a_post_says_why_nothing_started(
    curator_client: Any, analyst_client: Any, db: Any
) -> None:
    page = curator_client.get(reverse("run-list") + "?start=1").content.decode()
    assert 'id="no-claims"' in page and 'id="claims-run-form"' not in page
    response = curator_client.post(reverse("run-start-claims"), {}, follow=True)
    assert "There are no claims to estimate" in response.content.decode()
    assert not EstimationRun.objects.exists()
    assert analyst_client.post(reverse("run-start-claims"), {}).status_code == 403
    assert 'id="start-claims-run-link"' not in analyst_client.get(reverse("claim-list")).content.decode()


def test_a_curator_chooses_authorities_on_the_form_and_a_bad_choice_is_refused(
    curator_client: Any, analyst_client: Any, db: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("core.services.estimation.claim_runs.dispatch_job", lambda **kwargs: JobFactory())
    airline, tracker = SourceFactory(name="airline", chunk_count=0), SourceFactory(name="tracker", chunk_count=0)
    ClaimFactory(source=airline, subject="AA-1", attribute="actual departure time", value="07:16")
    ClaimFactory(source=tracker, subject="AA-1", attribute="actual departure time", value="07:02")
    outsider = SourceFactory(name="no-claims", chunk_count=2)

    # The form offers the sources that hold claims as authorities.
    page = curator_client.get(reverse("run-list") + "?start=1").content.decode()
    offered = page.split('id="id_authorities"', 1)[1].split("</select>", 1)[0]
    assert f'value="{airline.pk}">airline' in offered and "tracker" in offered and "no-claims" not in offered

    response = curator_client.post(reverse("run-start-claims"), {"estimator": "accucopy", "authorities": [airline.pk]})
    run = EstimationRun.objects.get(kind=EstimationRun.Kind.CLAIMS)
    assert response.status_code == 302 and response["Location"] == reverse("run-detail", args=[run.pk])
    assert run.params["authorities"] == [airline.pk]

    # A source the run does not cover, or no source id at all: refused, no run, the reason shown.
    for bad, says in ((outsider.pk, f"Authorities: Not a source of this run: {outsider.pk}."), ("ua", "Authorities:")):
        refused = curator_client.post(reverse("run-start-claims"), {"authorities": [bad]}, follow=True)
        assert says in refused.content.decode()
        assert EstimationRun.objects.filter(kind=EstimationRun.Kind.CLAIMS).count() == 1
    assert analyst_client.post(reverse("run-start-claims"), {"authorities": [airline.pk]}).status_code == 403
    # Without a choice the run has no authorities (as before).
    curator_client.post(reverse("run-start-claims"), {"estimator": "accucopy"})
    assert "authorities" not in EstimationRun.objects.filter(kind=EstimationRun.Kind.CLAIMS).latest("pk").params
