"""The ask form validates through the asking service and answers htmx with a result panel."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core.models import Question
from tests.factories import QuestionFactory


def test_the_ask_page_offers_the_runnable_strategies_with_ra_rag_selected(analyst_client: Any, db: Any) -> None:
    page = analyst_client.get(reverse("ask")).content.decode()
    assert '<option value="ra-rag" selected data-kappa="true">' in page
    assert '<option value="vanilla-rag"' in page
    # The offline reader writes no free text, and only the benchmark knows true reliabilities.
    assert 'value="vanilla-llm"' not in page and 'value="wmv-oracle"' not in page
    assert 'name="kappa"' in page and 'name="csrfmiddlewaretoken"' in page


def test_an_empty_question_is_refused_with_the_services_message(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "  ", "strategy": "ra-rag"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b"The question was not sent" in response.content
    assert Question.objects.count() == 0


def test_a_bad_kappa_is_refused(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "Who?", "kappa": "many"})
    assert response.status_code == 400 and b"whole number" in response.content


def test_asking_returns_a_polling_panel(analyst_client: Any, db: Any, monkeypatch: Any) -> None:
    def fake_start(text: str, **kwargs: Any) -> Question:
        return QuestionFactory(text=text, strategy=kwargs["strategy"], params={"kappa": kwargs["kappa"]})

    monkeypatch.setattr("core.views.ask.start_question", fake_start)
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Who wrote Dracula?", "strategy": "ra-rag", "kappa": "3"},
        headers={"HX-Request": "true"},
    )
    question = Question.objects.get()
    content = response.content.decode()
    assert f'hx-get="{reverse("question-panel", args=[question.pk])}"' in content
    assert 'hx-trigger="every 1s"' in content


def test_the_panel_stops_polling_once_answered(analyst_client: Any, world: Any) -> None:
    response = analyst_client.get(reverse("question-panel", args=[world.question.pk]))
    assert response.status_code == 286
    content = response.content.decode()
    assert "hx-trigger" not in content
    assert 'id="vote-table"' in content and "→ I don't know" in content
    assert "https://example.org/doc" in content  # passages link to their document


def test_the_csrf_token_is_required(db: Any, analyst: Any) -> None:
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)
    assert client.post(reverse("ask"), {"text": "Who?"}).status_code == 403


def test_the_ask_page_says_an_estimation_is_running_and_what_answers_look_like_meanwhile(
    analyst_client: Any, db: Any
) -> None:
    """Issue 38 row 12: on a fresh install every answer said its sources were never checked
    and nothing said that the first estimation was running."""
    from django.utils import timezone

    from core.models import EstimationRun
    from tasks.models import Job
    from tests.factories import EstimationRunFactory, SourceFactory

    assert 'id="estimation-running"' not in analyst_client.get(reverse("ask")).content.decode()
    job = Job.objects.create(kind=Job.Kind.ESTIMATE, progress_total=420, progress_current=105, message="Answering")
    run = EstimationRunFactory(state=EstimationRun.State.RUNNING, job=job)
    page = analyst_client.get(reverse("ask")).content.decode()
    assert 'id="estimation-running"' in page and f"run #{run.pk}" in page and "25% done: Answering" in page
    assert "no source's reliability has been checked" in page  # the first run

    EstimationRunFactory(succeeded=True)
    SourceFactory(reliability=0.8, reliability_updated_at=timezone.now())  # what a finished run leaves
    page = analyst_client.get(reverse("ask")).content.decode()
    assert "with the reliabilities of the last finished run" in page
