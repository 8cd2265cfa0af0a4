from __future__ import annotations

import math

import pytest

from core.bench.metrics import accuracy_interval, correlations, t_interval, wilson_interval
from tests.helpers import as_list


def test_wilson_interval_matches_the_textbook_value() -> None:
    lo, hi = wilson_interval(8, 10)
    assert math.isclose(lo, 0.4902, abs_tol=1e-3)
    assert math.isclose(hi, 0.9433, abs_tol=1e-3)


def test_wilson_interval_stays_inside_zero_and_one() -> None:
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0


def test_one_seed_uses_a_wilson_interval_over_questions() -> None:
    mean, interval = accuracy_interval([[True] * 8 + [False] * 2])
    assert mean == 0.8
    assert interval == wilson_interval(8, 10)


def test_several_seeds_use_a_t_interval_over_seed_accuracies() -> None:
    per_seed = [[True, False], [True, True], [False, False]]
    mean, interval = accuracy_interval(per_seed)
    assert math.isclose(mean, 0.5)
    lo, hi = t_interval([0.5, 1.0, 0.0])
    assert interval == (max(0.0, lo), min(1.0, hi))
    assert interval[0] < mean < interval[1]


def test_t_interval_narrows_with_agreeing_seeds() -> None:
    wide = t_interval([0.5, 0.7, 0.6])
    narrow = t_interval([0.6, 0.61, 0.59])
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_correlations_are_one_for_a_monotone_linear_estimate() -> None:
    result = correlations([0.2, 0.4, 0.6, 0.8], [0.1, 0.2, 0.3, 0.4])
    assert math.isclose(result["pearson"], 1.0)
    assert math.isclose(result["spearman"], 1.0)


def test_correlations_are_undefined_for_constant_truth() -> None:
    result = correlations([0.2, 0.4, 0.6], [0.9, 0.9, 0.9])
    assert math.isnan(result["pearson"])


def test_the_expected_calibration_error_is_the_count_weighted_gap_per_bin() -> None:
    from core.bench.metrics import calibration

    # Bin [0.9, 1.0]: confidence 0.95 twice, one right -> gap 0.45; bin [0.5, 0.6): 0.5 twice, both right -> 0.5.
    result = calibration([0.95, 0.95, 0.5, 0.5], [True, False, True, True])
    assert result["ece"] == pytest.approx(0.5 * 0.45 + 0.5 * 0.5)
    assert [b["count"] for b in as_list(result["bins"])] == [2, 2]
    perfect = calibration([1.0, 1.0, 0.0], [True, True, False])
    assert perfect["ece"] == pytest.approx(0.0)
    with pytest.raises(ValueError):
        calibration([0.5], [True, False])


def test_copy_detection_scores_the_pairs_shown_as_copying_apart_from_those_flagged() -> None:
    """A seed whose estimate agreement does not identify flags the honest pair (the estimate
    followed the colluders): the raw precision counts it, the product shows it as an unsettled
    group instead, so it is not among the pairs shown as copying."""
    from core.bench.qa import SeedRun
    from core.bench.runner import _copy_detection

    def seed(flagged: list[tuple[int, int]], shown: list[tuple[int, int]]) -> SeedRun:
        return SeedRun(
            seed=0,
            methods={},
            true_reliability={},
            estimated_accuracy={},
            estimated_weight={},
            answers_count={},
            estimation_calls=0,
            estimation_seconds=0.0,
            n_test=0,
            n_documents=0,
            flagged_pairs=flagged,
            shown_pairs=shown,
            colluding_pairs=[(1, 2)],
        )

    found = _copy_detection([seed([(1, 2)], [(1, 2)]), seed([(3, 4)], [])])
    assert (found["flagged"], found["precision"], found["recall"]) == (2, 0.5, 0.5)
    assert (found["shown_as_copying"], found["shown_precision"], found["shown_recall"]) == (1, 1.0, 0.5)
