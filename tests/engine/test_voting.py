from __future__ import annotations

from core.engine.steps.clustering import cluster_answers
from core.engine.steps.voting import majority_vote, weighted_vote

# Paper, Appendix F, first example.
OUTPUTS = ["judges", "i don't know", "president", "senators", "i don't know", "president", "president", "senators"]
TRUE_RELIABILITY = [0.83, 0.67, 0.47, 0.84, 0.57, 0.64, 0.47, 0.79]


def test_it_lets_reliable_sources_outvote_a_larger_unreliable_group() -> None:
    clustering = cluster_answers(OUTPUTS)
    wmv = weighted_vote(clustering.labels, TRUE_RELIABILITY)
    mv = majority_vote(clustering.labels)
    assert wmv.winner is not None and mv.winner is not None
    assert clustering.representatives[wmv.winner] == "senators"
    assert clustering.representatives[mv.winner] == "president"


def test_it_reports_confidence_as_share_of_non_idk_weight() -> None:
    outcome = weighted_vote([0, None, 1, 0], [1.0, 5.0, 1.0, 2.0])
    assert outcome.winner == 0
    assert abs(outcome.confidence - 3.0 / 4.0) < 1e-9
    assert outcome.weights == {0: 3.0, 1: 1.0}


def test_it_breaks_ties_by_count_then_first_seen() -> None:
    assert weighted_vote([0, 1, 1], [2.0, 1.0, 1.0]).winner == 1
    assert weighted_vote([1, 0], [1.0, 1.0]).winner == 1


def test_it_returns_no_winner_when_everyone_abstains() -> None:
    outcome = majority_vote([None, None])
    assert outcome.winner is None and outcome.confidence == 0.0
