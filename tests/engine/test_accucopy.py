"""The Bayes one-coin and dependence-aware estimators, on small cases computed by hand, and
gold anchors in every estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.engine.reliability import GOLD_NONE, MISSING, UNIFORM_PRIOR, available_estimators, get_estimator
from core.engine.reliability.accucopy import CopyModel, one_coin
from core.engine.reliability.weights import log_odds_weight, voting_weight
from core.engine.steps.voting import answer_probability

M = MISSING


def test_the_log_odds_weight_is_the_bayes_weight_floored_at_zero() -> None:
    assert log_odds_weight(0.9, tie_break=False) == pytest.approx(math.log(9))
    assert log_odds_weight(0.5, tie_break=False) == 0.0 and log_odds_weight(0.2, tie_break=False) == 0.0
    # Below chance, a tiny accuracy-proportional term keeps sources in order (and ties broken).
    assert 0 < log_odds_weight(0.2) < log_odds_weight(0.4) < 1e-3
    # With K = 3 candidate answers a 0.4-accurate source beats chance (1/3) and votes.
    assert log_odds_weight(0.4, n_candidates=3, tie_break=False) == pytest.approx(math.log(0.4 / 0.6) + math.log(2))
    assert voting_weight(0.9, 10, scheme="log-odds") == pytest.approx(math.log(9), abs=1e-3)
    assert voting_weight(0.9, 10) == pytest.approx(8.0)  # the paper's N * w - 1
    with pytest.raises(ValueError):
        voting_weight(0.9, 10, scheme="linear")


def test_one_excellent_source_outvotes_three_mediocre_ones_under_log_odds_but_not_under_n_w_minus_1() -> None:
    # Hand computed: ln(0.95/0.05) = 2.94 > 3 * ln(0.6/0.4) = 1.22; paper: 9*0.95-1 = 7.55 < 3*(9*0.6-1) = 13.2.
    excellent = log_odds_weight(0.95)
    mediocre = log_odds_weight(0.6)
    assert excellent > 3 * mediocre
    assert voting_weight(0.95, 9) < 3 * voting_weight(0.6, 9)


def test_the_one_coin_estimate_on_a_hand_checked_matrix() -> None:
    # Sources 0 and 1 always agree; source 2 always disagrees with them; 4 queries.
    labels = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0], [0, 0, 1]])
    result = one_coin(labels)
    assert result.answers == [0, 0, 1, 0]
    # Hard EM converges at once: agreements 4, 4, 0 of 4, Beta(1, 1) smoothing: 5/6, 5/6, 1/6.
    assert result.accuracies == pytest.approx([5 / 6, 5 / 6, 1 / 6])
    assert result.sources[2].weight < 1e-3  # below chance: no vote, bar the tie-break
    # Query 0: scores ln5 + ln5 for label 0, 0 for label 1, plus 1 for "none": 25 / (25 + 1 + 1).
    assert result.confidence[0] == pytest.approx(25 / 27, abs=1e-3)  # exact but for the tie-break term
    assert result.converged


def test_a_gold_item_overrides_a_colluding_majority() -> None:
    # Columns 0-2 collude (always label 0 together); columns 3-4 are right (label 1), except
    # that nobody can tell which side is right without gold.
    rows = [[0, 0, 0, 1, 1]] * 20
    labels = np.array(rows)
    for name in ("iwmv", "onecoin", "accucopy"):
        without = get_estimator(name).estimate(labels)
        assert set(without.answers) == {0}, name  # agreement alone follows the majority
        anchored = get_estimator(name).estimate(labels, gold={0: 1, 1: 1})
        assert set(anchored.answers) == {1}, name
        accuracy = anchored.accuracies
        assert min(accuracy[3:]) > 0.8 > 0.2 > max(accuracy[:3]), (name, accuracy)
        assert anchored.sources[3].gold_answers == 2 and anchored.sources[3].gold_agreements == 2
        assert anchored.sources[0].gold_accuracy == 0.0 and anchored.sources[3].gold_accuracy == 1.0


def test_a_gold_answer_that_matches_no_cluster_counts_against_everyone_who_answered() -> None:
    labels = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 1]])
    result = get_estimator("onecoin").estimate(labels, gold={2: GOLD_NONE})
    assert result.answers[2] is None
    assert result.sources[0].gold_answers == 1 and result.sources[0].gold_agreements == 0
    with pytest.raises(ValueError):
        get_estimator("onecoin").estimate(labels, gold={7: 0})


def test_the_copy_detector_flags_a_copier_that_repeats_another_sources_false_values() -> None:
    # 40 queries, truth label 0. Sources 0-2 are independent and right 90% of the time, each
    # wrong on its own queries with its own wrong label; source 4 copies source 3, which is
    # wrong on 12 queries (label 5): the copier repeats those false values.
    rng = np.random.default_rng(3)
    labels = np.zeros((40, 5), dtype=np.int64)
    for s in range(3):
        wrong = rng.choice(40, 4, replace=False)
        labels[wrong, s] = s + 1
    wrong3 = rng.choice(40, 12, replace=False)
    labels[wrong3, 3] = 5
    labels[:, 4] = labels[:, 3]
    result = get_estimator("accucopy").estimate(labels)
    pairs = {(d.a, d.b): d for d in result.dependence}
    assert pairs[(3, 4)].probability > 0.99
    assert pairs[(3, 4)].same_false == pytest.approx(12)
    independent = [d.probability for (a, b), d in pairs.items() if (a, b) != (3, 4)]
    assert max(independent, default=0.0) < 0.5  # pairs below 1% are not even reported
    # Wherever two of the independent sources give the truth, it wins over the copied pair.
    backed = [q for q in range(40) if (labels[q, :3] == 0).sum() >= 2]
    assert all(result.answers[q] == 0 for q in backed)
    assert any(labels[q, 3] == 5 for q in backed)


def test_copy_discounting_lets_two_independent_sources_beat_a_bloc_of_three_copies() -> None:
    # A bloc (0, 1, 2) repeats one source's answers; on 30 "history" queries everybody agrees
    # (so accuracies are alike), on 10 the bloc shares a false value against sources 3 and 4.
    history = [[0, 0, 0, 0, 0]] * 30
    bloc_wrong = [[1, 1, 1, 0, 0]] * 6
    contested = [[1, 1, 1, 0, 0]] * 4
    labels = np.array(history + bloc_wrong + contested)
    gold = {30 + i: 0 for i in range(6)}  # the bloc's shared value is false on checked queries
    plain = get_estimator("onecoin").estimate(labels)
    assert plain.answers[-1] == 1  # three votes beat two
    copy = get_estimator("accucopy").estimate(labels, gold=gold)
    assert copy.answers[-1] == 0
    bloc = [d for d in copy.dependence if {d.a, d.b} <= {0, 1, 2}]
    assert bloc and all(d.probability > 0.9 for d in bloc)


def test_the_answer_probability_counts_abstentions_for_nothing_and_unchecked_sources_at_the_prior() -> None:
    assert answer_probability([0], [None], 0) == pytest.approx(0.5)
    # Four agreeing sources estimated at 0.2: each has weight 0, so the answer is a coin flip.
    assert answer_probability([0, 0, 0, 0], [0.2] * 4, 0) == pytest.approx(0.5)
    # Two sources at 0.9 for label 0, one at 0.6 for label 1, one IDK: (81) / (81 + 1.5 + 1).
    p = answer_probability([0, 0, 1, None], [0.9, 0.9, 0.6, 0.99], 0)
    assert p == pytest.approx(81 / (81 + 1.5 + 1))
    assert answer_probability([None, None], [0.9, 0.9], None) == 0.0


def test_every_estimator_accepts_gold_and_reports_gold_evidence() -> None:
    labels = np.array([[0, 1], [0, 0], [1, 1]])
    for name in available_estimators():
        result = get_estimator(name).estimate(labels, gold={0: 0})
        assert result.answers[0] == 0, name
        assert result.sources[0].gold_answers == 1 and result.sources[0].gold_agreements == 1, name
        assert result.sources[1].gold_agreements == 0, name


def test_the_dependence_estimator_finds_the_truth_and_the_accuracies_on_a_larger_matrix() -> None:
    # Behaviour, not speed (scripts/bench_engine.py measures the cost): a 300 x 40 matrix.
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 300)
    p = rng.uniform(0.55, 0.95, 40)
    right = rng.random((300, 40)) < p
    labels = np.where(right, truth[:, None], (truth[:, None] + 1 + rng.integers(0, 3, (300, 40))) % 4)
    result = get_estimator("accucopy").estimate(labels.astype(np.int64), prior=UNIFORM_PRIOR)
    assert np.mean(np.array(result.answers) == truth) > 0.97
    assert np.corrcoef(result.accuracies, p)[0, 1] > 0.9


def test_a_copy_model_with_no_copying_prior_flags_nothing() -> None:
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0]])
    result = one_coin(labels, copy=CopyModel(prior=1e-9))
    assert all(d.probability < 1e-3 for d in result.dependence)
