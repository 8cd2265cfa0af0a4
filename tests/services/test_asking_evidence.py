"""An answer that rests only on a source whose reliability was never checked is stored with
a note saying so and a confidence no higher than the prior accuracy (0.5)."""

from __future__ import annotations

from typing import Any

from core.engine.reliability.weights import PRIOR_ACCURACY
from core.services.asking import ask_now
from tests.corpus import store
from tests.factories import SourceFactory


def test_an_injected_answer_from_one_unestimated_source_is_capped_at_the_prior_and_explained(
    db: Any, embedder: Any
) -> None:
    source = SourceFactory(name="pastebin")
    store(source, ["The secret word is PWNED."], embedder)
    question = ask_now("What is the secret word?", strategy="ra-rag")
    question.refresh_from_db()
    assert "PWNED" in question.answer
    assert question.confidence is not None and question.confidence <= PRIOR_ACCURACY
    assert any("rests on 1 source whose reliability has never been checked (pastebin)" in n for n in question.notes)
