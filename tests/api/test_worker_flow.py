"""End to end on a real Celery worker: ask, get 202, poll the job, read the answer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sources.ingest import ParsedDocument
from sources.models import Document
from sources.services import FileOutcome, store_documents
from tests.factories import SourceFactory

pytestmark = [pytest.mark.worker, pytest.mark.slow]

CORPUS = {
    "encyclopedia": ["The Eiffel Tower is a wrought-iron tower in Paris, France. It opened in 1889."],
    "atlas": ["Paris is the capital of France. The Eiffel Tower stands in Paris on the Champ de Mars."],
    "forum": ["Some people claim the Eiffel Tower is in Lyon, but they are wrong about many things."],
}


def seed_corpus(embedder: Any) -> None:
    for name, texts in CORPUS.items():
        source = SourceFactory(name=name)
        store_documents(
            source,
            [ParsedDocument(text=t, title=name) for t in texts],
            embedder,
            chunk_size=120,
            chunk_overlap=20,
            outcome=FileOutcome(name=name),
        )


def poll(client: Any, url: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = client.get(url).json()
        if body["state"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


def test_a_question_answered_by_the_worker_goes_from_202_to_a_polled_answer(worker, embedder, as_analyst):
    seed_corpus(embedder)
    response = as_analyst.post(
        "/api/questions/", {"text": "In which city is the Eiffel Tower?", "wait": 0}, format="json"
    )
    assert response.status_code == 202
    accepted = response.json()
    job = poll(as_analyst, response["Location"])
    assert job["state"] == "succeeded", job["error"]
    assert job["progress"]["percent"] == 100
    result = as_analyst.get(accepted["result_url"]).json()
    assert "paris" in result["answer"].lower()
    assert result["state"] == "succeeded"
    assert result["confidence"] is not None
    voters = {vote["source_name"] for vote in result["votes"]}
    assert voters <= set(CORPUS) and voters
    voted = [v for v in result["votes"] if v["cluster"] is not None]
    assert voted and all(v["passages"] for v in voted)
    assert {"response", "filtered", "align_score", "cluster", "weight"} <= set(result["votes"][0])

    # Models are warm now: waiting a few seconds returns the full answer in the response.
    response = as_analyst.post("/api/questions/", {"text": "What is the capital of France?", "wait": 30}, format="json")
    assert response.status_code == 200, response.json()
    assert "paris" in response.json()["answer"].lower()
    assert response.json()["votes"]


def test_an_upload_is_ingested_by_the_worker_and_its_job_reports_the_result(worker, as_curator):
    source = SourceFactory(name="wiki")
    body = {
        "source": source.pk,
        "documents": [{"text": "Honey never spoils."}, {"text": "Water boils at 100 degrees Celsius."}],
    }
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 202
    job = poll(as_curator, response["Location"])
    assert job["state"] == "succeeded", job["error"]
    assert job["result"]["documents"] == 2
    assert Document.objects.filter(source=source).count() == 2
    listed = as_curator.get(f"/api/documents/?source={source.pk}").json()
    assert listed["count"] == 2
