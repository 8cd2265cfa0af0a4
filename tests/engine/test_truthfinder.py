from __future__ import annotations

import numpy as np
import pytest

from core.engine.reliability import MISSING, UNIFORM_PRIOR
from core.engine.reliability.truthfinder import TruthFinderEstimator, exact_similarity, truthfinder
from core.engine.reliability.weights import voting_weight

CLAIMS = [
    (t, s, v)
    for s, t, v in [
        ("good", "a", "1"),
        ("good", "b", "1"),
        ("good", "c", "1"),
        ("good", "d", "x"),
        ("ok", "a", "1"),
        ("ok", "b", "1"),
        ("ok", "c", "1"),
        ("bad", "a", "2"),
        ("bad", "b", "2"),
        ("bad", "c", "2"),
        ("bad", "d", "y"),
        ("worse", "a", "3"),
        ("worse", "b", "3"),
        ("worse", "c", "3"),
    ]
]


def test_it_follows_the_source_that_is_right_elsewhere() -> None:
    result = truthfinder(CLAIMS)
    assert result.truths["d"] == "x"
    assert result.trust["good"] > result.trust["bad"]
    assert result.converged


def test_it_does_not_depend_on_the_order_of_the_claims() -> None:
    forward = truthfinder(CLAIMS)
    backward = truthfinder(list(reversed(CLAIMS)))
    assert forward.truths == backward.truths
    assert forward.trust == pytest.approx(backward.trust)


def test_similar_values_support_each_other() -> None:
    # Two sources say "10", one "11", one "12" alone; "11" is close to "10" under a numeric
    # similarity, so its confidence rises above that of the isolated "12".
    claims = [("t", "s1", "10"), ("t", "s2", "10"), ("t", "s3", "11"), ("t", "s4", "12")]
    near = truthfinder(claims, similarity=lambda a, b: 1.0 if abs(int(a) - int(b)) <= 1 else 0.0)
    exact = truthfinder(claims, similarity=exact_similarity)
    assert near.truths == exact.truths == {"t": "10"}
    assert near.confidence[("t", "11")] > exact.confidence[("t", "11")]


def test_it_works_on_any_ordered_keys_and_on_no_claims() -> None:
    result = truthfinder([(0, 1, 5), (0, 2, 5), (0, 3, 6), (1, 1, 7)])
    assert result.truths == {0: 5, 1: 7}
    no_claims: list[tuple[int, int, int]] = []
    empty = truthfinder(no_claims)
    assert empty.truths == {} and empty.trust == {} and empty.iterations == 0


def test_the_estimator_reports_trust_and_agreement_against_its_own_truths() -> None:
    labels = np.array(
        [
            [0, 0, 1, MISSING],
            [0, 0, 0, 1],
            [1, 1, 0, 0],
            [MISSING, 2, 2, 0],
        ],
        dtype=np.int64,
    )
    result = TruthFinderEstimator().estimate(labels, prior=UNIFORM_PRIOR)
    claims = [(q, s, int(labels[q, s])) for q in range(4) for s in range(4) if labels[q, s] != MISSING]
    direct = truthfinder(claims)
    assert result.answers == [direct.truths[q] for q in range(4)]
    for s, source in enumerate(result.sources):
        assert source.accuracy == direct.trust[s]
        assert source.weight == voting_weight(direct.trust[s], 4)
        estimated = np.array(result.answers)
        column = labels[:, s]
        assert source.answers == int((column != MISSING).sum())
        assert source.agreements == int(((column == estimated) & (column != MISSING)).sum())
