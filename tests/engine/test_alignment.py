from __future__ import annotations

from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.steps.alignment import align, declarative_form
from core.engine.text import is_idk
from tests.fakes import HashEmbedder

NLI = EmbeddingLexicalNLI(HashEmbedder())
QUESTION = "who recorded i can't help falling in love with you"
PASSAGES = [
    "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961.",
    "The weather in Memphis is humid in summer.",
]


def test_it_rewrites_wh_questions_as_statements() -> None:
    assert declarative_form("who is the ceo of Apple?", "Tim Cook") == "Tim Cook is the ceo of Apple."
    assert declarative_form(QUESTION, "Elvis").startswith("Elvis recorded")
    assert declarative_form("Tea or coffee", "tea") == "Tea or coffee tea."


def test_it_keeps_an_answer_the_passages_support() -> None:
    result = align(QUESTION, "Elvis Presley", PASSAGES, NLI)
    assert not result.filtered
    assert result.response == "Elvis Presley"
    assert result.score >= 0.1


def test_it_turns_an_unsupported_answer_into_idk() -> None:
    result = align(QUESTION, "Frank Sinatra", PASSAGES, NLI)
    assert result.filtered
    assert is_idk(result.response)
    assert result.score < 0.1


def test_it_does_not_mark_an_idk_response_as_filtered() -> None:
    result = align(QUESTION, "I don't know", PASSAGES, NLI)
    assert is_idk(result.response) and not result.filtered
