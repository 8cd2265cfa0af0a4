"""Admin pages of the engine's models and the Sources action that starts a run."""

from __future__ import annotations

from django.test import Client

from core.engine.types import Embedder
from core.models import EstimationRun, QueryCollection
from core.services.asking import ask_now
from tasks.models import Job
from tests.corpus import build_corpus


def test_the_admin_lists_query_sets_queries_runs_and_questions(db, admin_client, embedder):
    build_corpus(embedder, reliable=1)
    question = ask_now("What is the chemical symbol for gold?", strategy="ra-rag-all")
    for url in (
        "/admin/core/querycollection/",
        "/admin/core/factquery/?origin__exact=curated",
        "/admin/core/estimationrun/",
        "/admin/core/question/?q=gold",
        f"/admin/core/question/{question.pk}/change/",
        f"/admin/core/querycollection/{QueryCollection.objects.get().pk}/change/",
    ):
        response = admin_client.get(url)
        assert response.status_code == 200, url
    assert "Au" in admin_client.get(f"/admin/core/question/{question.pk}/change/").content.decode()


def test_the_sources_action_starts_an_estimation_run_on_the_selected_sources(
    db: None, admin_client: Client, embedder: Embedder
) -> None:
    good, bad, _ = build_corpus(embedder, reliable=2)  # three sources: the least a run accepts
    response = admin_client.post(
        "/admin/sources/source/",
        {"action": "start_estimation", "_selected_action": [good[0].pk, good[1].pk, bad.pk]},
        follow=True,
    )
    assert response.status_code == 200
    run = EstimationRun.objects.get()
    assert set(run.sources.all()) == {good[0], good[1], bad}
    assert run.job is not None
    assert run.job.kind == Job.Kind.ESTIMATE
    assert f"Estimation run {run.pk} started" in response.content.decode()
