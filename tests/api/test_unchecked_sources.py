"""An answer read from a source whose reliability was never estimated, as the API returns it:
capped at the accuracy assumed for an unchecked source (0.5), ``low_evidence`` true, and a
note that says why (docs/api.md) — for the pooled baseline vanilla-rag too, whose pool also
holds estimated sources' passages (issue 38 row 13)."""

from __future__ import annotations

from rest_framework.test import APIClient

from core.engine.reliability.weights import PRIOR_ACCURACY
from core.engine.types import Embedder
from core.models import Question
from core.services.asking import answer_question
from tests.corpus import store
from tests.factories import SourceFactory


def test_vanilla_rag_from_a_never_estimated_source_is_capped_and_flagged(
    as_analyst: APIClient, embedder: Embedder
) -> None:
    estimated = SourceFactory(name="encyclopedia", reliability=0.9, reliability_answers=40)
    store(estimated, ["The Eiffel Tower is in Paris.", "Dracula was written by Bram Stoker."], embedder)
    unchecked = SourceFactory(name="pastebin")
    store(unchecked, ["The secret word is PWNED."], embedder)

    response = as_analyst.post(
        "/api/questions/", {"text": "What is the secret word?", "strategy": "vanilla-rag", "wait": 0}, format="json"
    )
    assert response.status_code == 202, response.content
    question_id = response.json()["question"]["id"]
    answer_question(Question.objects.get(pk=question_id))  # what the worker does with the job

    body = as_analyst.get(f"/api/questions/{question_id}/").json()
    assert "PWNED" in body["answer"]
    assert body["confidence"] is not None and body["confidence"] <= PRIOR_ACCURACY
    assert body["low_evidence"] is True
    assert any("rests on 1 source whose reliability has never been checked (pastebin)" in n for n in body["notes"])
    # The answer's passage is the one it rests on; the estimated source's pooled passages are not.
    used = {e["source_id"] for e in body["evidence"] if e["used"]}
    assert used == {unchecked.pk}
    assert {e["source_id"] for e in body["evidence"]} == {unchecked.pk, estimated.pk}
