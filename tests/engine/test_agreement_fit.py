"""The agreement fit (issue 37): independent sources agree about w_i * w_j of the time, so
accuracies an estimate has inflated predict more agreement than the sources show."""

from __future__ import annotations

import numpy as np

from core.engine.reliability.base import MISSING, Dependence, Identification, ReliabilityResult, SourceReliability
from core.engine.reliability.identify import FIT_MAX_DEFICIT, agreement_fit, with_agreement_fit

TRUE = (0.95, 0.9, 0.85, 0.6, 0.6, 0.55)


def answers(seed: int = 0, n_items: int = 300) -> np.ndarray:
    """Independent sources with accuracies TRUE; a wrong answer is one of 50 wrong values."""
    rng = np.random.default_rng(seed)
    right = rng.random((n_items, len(TRUE))) < np.array(TRUE)
    return np.where(right, 0, rng.integers(1, 51, size=(n_items, len(TRUE)))).astype(np.int64)


def result_with(accuracies: tuple[float, ...], dependence: list[Dependence] | None = None) -> ReliabilityResult:
    sources = [
        SourceReliability(accuracy=a, weight=0.0, answers=300, agreements=0, interval=(0.0, 1.0)) for a in accuracies
    ]
    return ReliabilityResult(sources, [0] * 300, 1, True, dependence=dependence or [])


def test_true_accuracies_fit_and_inflated_ones_do_not() -> None:
    labels = answers()
    fit, pairs, overrated = agreement_fit(labels, result_with(TRUE))
    assert pairs == 15 and fit > FIT_MAX_DEFICIT and overrated == []
    inflated = (0.95, 0.9, 0.85, 0.99, 0.99, 0.99)  # the three poor sources rated as a decisive listing
    fit, _, overrated = agreement_fit(labels, result_with(inflated))
    assert fit < FIT_MAX_DEFICIT
    assert {3, 4, 5} <= set(overrated)


def test_dependent_pairs_are_left_out_of_the_fit() -> None:
    labels = answers()
    labels[:, 4] = labels[:, 3]  # a mirror: agrees with 3 on everything
    _, pairs, _ = agreement_fit(labels, result_with(TRUE))
    assert pairs == 14
    found = [Dependence(a=0, b=1, probability=0.9, shared=300, same_true=0.0, same_false=0.0, different=0)]
    _, pairs, _ = agreement_fit(labels, result_with(TRUE, found))
    assert pairs == 13


def test_an_identified_verdict_becomes_unsettled_only_when_the_fit_fails() -> None:
    labels = answers()
    found = Identification(True, "settled")
    assert with_agreement_fit(labels, result_with(TRUE), found) is found
    verdict = with_agreement_fit(labels, result_with((0.95, 0.9, 0.85, 0.99, 0.99, 0.99)), found)
    assert not verdict.identified and verdict.dissent_bloc and verdict.unsettled_blocs == [verdict.dissent_bloc]
    unsettled = Identification(False, "unsettled")
    assert with_agreement_fit(labels, result_with((0.95, 0.9, 0.85, 0.99, 0.99, 0.99)), unsettled) is unsettled


def test_the_fit_checks_are_items_where_a_misfit_source_carries_the_value_against_more_voices() -> None:
    from core.engine.reliability.identify import fit_checks

    # Four sources, three items. Item 0: source 0 (misfit) carries the estimated value 0 against
    # sources 1 and 2 (value 1): a test. Item 1: the estimated value has more voices: no test.
    # Item 2: sources 1 and 2 give two other values, one voice each: no value outvotes source 0's.
    labels = np.array([[0, 1, 1, 1], [0, 0, 0, 1], [0, 1, 2, -1]], dtype=np.int64)
    result = ReliabilityResult(
        [SourceReliability(accuracy=0.9, weight=0.0, answers=3, agreements=3, interval=(0.0, 1.0))] * 4,
        [0, 0, 0],
        1,
        True,
    )
    assert fit_checks(labels, result, [0], checks=5) == [0]
    assert fit_checks(labels, result, [3], checks=5) == []  # 3 never gives the estimated value
    assert fit_checks(labels, result, [0], checks=0) == []


def test_listing_probes_are_the_listings_items_where_the_other_sources_weigh_another_value_more() -> None:
    from core.engine.reliability.identify import listing_probes

    # Sources 0-2 mirror one listing on 60 items (the estimate follows it); source 3 (rated 0.9)
    # gives another value on items 0-9, source 4 (rated 0.6) on items 10-19, where source 3 (and
    # source 5, 0.55) give the listing's value: only items 0-9 are outweighed.
    n = 60
    labels = np.zeros((n, 6), dtype=np.int64)
    labels[:10, 3] = 1
    labels[10:20, 4] = 1
    result = ReliabilityResult(
        [
            SourceReliability(accuracy=a, weight=0.0, answers=n, agreements=n, interval=(0.0, 1.0))
            for a in (0.99, 0.99, 0.99, 0.9, 0.6, 0.55)
        ],
        [0] * n,
        1,
        True,
    )
    probes = listing_probes(labels, result, gold=[0, 1], checks=5)
    assert probes == [2, 3, 4, 5, 6]  # source 3's disagreements outweigh (items 0 and 1 are checked)
    assert listing_probes(labels, result, checks=20) == list(range(10))
    # Values one within a mapping's tolerance are no test of the listing.
    assert listing_probes(labels, result, checks=20, same=lambda _q, _a, _b: True) == []
    # An estimate that follows no listing tests its most trusted sources (within PROBE_BAND of the
    # highest: 0-3) where they give one value and the others weigh another more: items 10-19.
    elsewhere = ReliabilityResult(result.sources, [1] * n, 1, True)
    assert listing_probes(labels, elsewhere, checks=5) == [10, 11, 12, 13, 14]


def test_listing_probes_without_a_listing_need_two_trusted_sources_that_agree() -> None:
    from core.engine.reliability.identify import listing_probes

    # Sources 0 and 1 (rated 0.99) are the estimate's most trusted; sources 2 and 3 (0.85) give
    # another value on items 0-9, source 4 (0.55) theirs: items 0-9 test them, if they vouch for
    # each other (30+ shared items, the same value on 90%+ of them).
    n = 60
    result = ReliabilityResult(
        [
            SourceReliability(accuracy=a, weight=0.0, answers=n, agreements=n, interval=(0.0, 1.0))
            for a in (0.99, 0.99, 0.85, 0.85, 0.55)
        ],
        [None] * n,
        1,
        True,
    )
    labels = np.zeros((n, 5), dtype=np.int64)
    labels[:10, 2:4] = 1
    assert listing_probes(labels, result, checks=5) == [0, 1, 2, 3, 4]
    differ = labels.copy()
    differ[40:50, 1] = 2  # the same value on 50 of 60 shared items: below 0.9
    assert listing_probes(differ, result, checks=5) == []
    few = labels.copy()
    few[:, 1] = MISSING
    few[:20, 1] = 0  # 20 shared items: too few to vouch
    assert listing_probes(few, result, checks=5) == []
    # Where the trusted sources differ the item is no test of them, unless within a tolerance.
    apart = labels.copy()
    apart[:5, 1] = 3  # still the same value on 55 of 60
    assert listing_probes(apart, result, checks=5) == [5, 6, 7, 8, 9]
    one_value = listing_probes(apart, result, checks=5, same=lambda _q, a, b: {a, b} == {0, 3})
    assert one_value == [0, 1, 2, 3, 4]
