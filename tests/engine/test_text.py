from __future__ import annotations

from core.engine.text import answer_contains_gold, is_idk, normalize_answer


def test_it_normalizes_like_squad() -> None:
    assert normalize_answer("The  Origins, of Replication!") == "origins of replication"
    assert normalize_answer("An Apple a day") == "apple day"


def test_it_recognises_idk_variants() -> None:
    for text in [
        "",
        "  ",
        "I don't know",
        "I don’t know.",
        "i do not know",
        "Unknown",
        "No answer",
        "I don't know based on the context.",
    ]:
        assert is_idk(text), text
    for text in ["Paris", "not Paris", "unknown soldier tomb"]:
        assert not is_idk(text), text


def test_it_checks_gold_containment_on_word_boundaries() -> None:
    assert answer_contains_gold("the Frank Sinatra version", ["Frank Sinatra"])
    assert answer_contains_gold("24 episodes", "24")
    assert not answer_contains_gold("124 episodes", "24")
    assert not answer_contains_gold("I don't know", "know")
