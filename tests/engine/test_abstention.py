"""Abstention is an answer, and a contested answer says so (issue 36)."""

from __future__ import annotations

from core.engine.strategies import StrategyResult
from core.engine.text import is_idk
from tests.engine.one_passage import FALSE, NOISE, TRUE, ask


def _ask(name: str, sources: list[tuple[str, float, float]]) -> StrategyResult:
    return ask(name, sources, kappa=3)


def test_an_answer_only_unreliable_sources_give_is_no_reliable_answer() -> None:
    # The two reliable sources hold nothing on the question; the content farm holds the lie.
    result = _ask("ra-rag", [(NOISE, 0.95, 3.0), (NOISE, 0.9, 2.2), (FALSE, 0.1, 0.0)])
    assert is_idk(result.answer) and result.confidence == 0.0
    (note,) = result.notes
    assert note.startswith("No reliable answer") and "source 2 (0.10)" in note and "Frank Sinatra" in note
    assert not any(e.used for e in result.evidence)
    # Its vote is still shown, as given.
    assert [v.response for v in result.votes if v.cluster is not None] == ["Frank Sinatra"]
    # Majority vote does not weigh reliability: it answers.
    assert "Frank Sinatra" in _ask("mv", [(NOISE, 0.95, 3.0), (NOISE, 0.9, 2.2), (FALSE, 0.1, 0.0)]).answer


def test_a_source_estimated_at_least_a_coin_still_answers() -> None:
    result = _ask("ra-rag", [(NOISE, 0.95, 3.0), (FALSE, 0.55, 0.2)])
    assert "Frank Sinatra" in result.answer
    assert not any(n.startswith("No reliable answer") for n in result.notes)


def test_a_losing_answer_with_a_quarter_of_the_weight_is_named() -> None:
    result = _ask("ra-rag", [(TRUE, 0.95, 3.0), (FALSE, 0.8, 1.4)])
    assert "Elvis Presley" in result.answer
    contested = [n for n in result.notes if n.startswith("Contested")]
    assert len(contested) == 1 and "source 1" in contested[0] and "Frank Sinatra" in contested[0]
    # A lone dissenter with a tenth of the weight is not worth a warning.
    quiet = _ask("ra-rag", [(TRUE, 0.95, 3.0), (TRUE, 0.9, 2.2), (FALSE, 0.6, 0.4)])
    assert not [n for n in quiet.notes if n.startswith("Contested")]
