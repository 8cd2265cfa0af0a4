from __future__ import annotations

import argparse

import pytest

from core.bench.cli import add_arguments
from core.bench.datasets import BenchQuestion
from core.bench.qa import QAConfig, run_seed
from core.bench.report import qa_table
from core.engine.reliability import DEFAULT_ESTIMATOR, available_estimators
from core.engine.reliability.weights import voting_weight
from tests.bench.fakes import HashingEmbedder


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_estimator_option_defaults_to_the_products_default_like_the_qa_config() -> None:
    assert _parse().estimator == DEFAULT_ESTIMATOR == QAConfig().estimator
    assert _parse().gold_queries == 0 == QAConfig().gold_queries
    assert _parse("--gold-queries", "10").gold_queries == 10


def test_the_estimator_option_accepts_every_registered_estimator_and_nothing_else() -> None:
    for name in available_estimators():
        assert _parse("--estimator", name).estimator == name
    with pytest.raises(SystemExit):
        _parse("--estimator", "majority")


def test_the_qa_table_names_the_estimate_it_compares_with_the_truth() -> None:
    summary = {"methods": {}, "reliability": {"pearson": 0.5, "spearman": 0.25}}
    assert "(IWMV w_i vs p_i" in qa_table(summary)
    assert "(IWMV w_i vs p_i" in qa_table({**summary, "config": {"estimator": "iwmv"}})
    assert "(TruthFinder t(w) vs p_i" in qa_table({**summary, "config": {"estimator": "truthfinder"}})


def test_a_seeded_run_can_estimate_with_truthfinder_and_ranks_the_adversaries_last(
    poisonedrag: list[BenchQuestion],
) -> None:
    config = QAConfig(
        sources=5,
        adversaries=2,
        estimation_queries=20,
        max_questions=50,
        methods=["mv", "ra-rag"],
        memo=False,
        estimator="truthfinder",
    )
    run = run_seed(config, poisonedrag, HashingEmbedder(), seed=0)
    assert sorted(run.estimated_accuracy) == sorted(run.true_reliability)
    assert all(0.0 <= a <= 1.0 for a in run.estimated_accuracy.values())
    assert run.estimated_weight == {sid: voting_weight(a, 5) for sid, a in run.estimated_accuracy.items()}
    assert all(len(m.correct) == 30 for m in run.methods.values())
    honest = [a for sid, a in run.estimated_accuracy.items() if run.true_reliability[sid] > 0.5]
    adversaries = [a for sid, a in run.estimated_accuracy.items() if run.true_reliability[sid] < 0.5]
    assert min(honest) > max(adversaries)
