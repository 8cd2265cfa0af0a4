"""Finishing a run on the real database with the real clustering and estimators: gold-checked
queries anchor the estimate and each source's gold evidence is stored; estimators that detect
copying store every pair's dependence with the false answers the pair shares."""

from __future__ import annotations

import pytest

from core.engine.types import Embedder
from core.models import ReliabilityScore, RunAnswer, SourceDependence
from core.services.estimation import finish_run
from tests.factories import SourceFactory
from tests.helpers import as_list
from tests.services.collusion import COLLUDERS, FACTS, HONEST, collusion_run


def scores_by_name(run) -> dict[str, ReliabilityScore]:
    return {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}


def answers_of(run) -> list[str]:
    return list(RunAnswer.objects.filter(run=run).order_by("query_id").values_list("answer", flat=True))


def test_three_gold_checked_queries_override_a_colluding_majority_and_each_source_s_gold_evidence_is_stored(
    db: None, embedder: Embedder
) -> None:
    run, queries, sources = collusion_run(gold=3, estimator="onecoin")
    summary = finish_run(run)
    run.refresh_from_db()
    assert run.gold_queries == [q.pk for q in queries[:3]]
    assert summary["gold_queries"] == 3
    assert answers_of(run) == [right for _, right, _ in FACTS]
    scores = scores_by_name(run)
    for name in HONEST:
        assert (scores[name].gold_answers, scores[name].gold_agreements) == (3, 3)
        assert scores[name].gold_accuracy == 1.0
    for name in COLLUDERS:
        assert (scores[name].gold_answers, scores[name].gold_agreements) == (3, 0)
        assert scores[name].gold_accuracy == 0.0
        assert scores[name].reliability < min(scores[h].reliability for h in HONEST)
    sources["honest-a"].refresh_from_db()
    assert sources["honest-a"].reliability == pytest.approx(scores["honest-a"].reliability)
    assert {s["source"]: s["gold_agreements"] for s in as_list(summary["scores"])}["honest-a"] == 3


def test_a_run_that_does_not_use_gold_estimates_from_agreement_alone(db, embedder):
    run, _, _ = collusion_run(gold=3, estimator="onecoin", use_gold=False)
    finish_run(run)
    run.refresh_from_db()
    assert run.gold_queries == []
    assert answers_of(run) == [wrong for _, _, wrong in FACTS]  # agreement alone follows the colluders
    assert all(s.gold_answers == 0 and s.gold_accuracy is None for s in scores_by_name(run).values())


def test_accucopy_stores_the_colluders_as_dependent_with_the_false_answers_they_share(db, embedder):
    run, queries, sources = collusion_run(gold=3, estimator="accucopy")
    summary = finish_run(run)
    pairs = {
        (d.source_a.name, d.source_b.name): d
        for d in SourceDependence.objects.filter(run=run).select_related("source_a", "source_b")
    }
    colluding = {("colluder-x", "colluder-y"), ("colluder-x", "colluder-z"), ("colluder-y", "colluder-z")}
    detected = {pair for pair, d in pairs.items() if d.probability >= 0.5}
    assert detected == colluding
    assert summary["dependent_pairs"] == 3
    xy = pairs[("colluder-x", "colluder-y")]
    assert xy.source_a_id < xy.source_b_id and xy.shared == 10 and xy.different == 0
    assert xy.same_false == pytest.approx(10.0)
    # Evidence: the first five queries, where both gave the same answer and it is not the run's.
    assert xy.examples == [
        {"query_id": query.pk, "query": question, "answer": wrong}
        for query, (question, _, wrong) in list(zip(queries, FACTS, strict=True))[:5]
    ]
    for pair in set(pairs) - colluding:  # pairs reported less likely dependent carry no false answers
        assert pairs[pair].probability < 0.5 and pairs[pair].examples == []


def test_an_estimator_without_copy_detection_stores_no_dependence(db, embedder):
    run, _, _ = collusion_run(gold=3, estimator="iwmv")
    summary = finish_run(run)
    assert not SourceDependence.objects.filter(run=run).exists()
    assert summary["dependent_pairs"] == 0


def test_a_strong_prior_never_puts_an_estimate_outside_its_interval_and_a_source_outside_the_run_keeps_its_values(
    db: None, embedder: Embedder
) -> None:
    # Beta(1000, 1000) pulls every estimate towards 0.5, well below the raw agreement rate's
    # Wilson interval of a source that always agrees; a source the run does not cover keeps
    # what its own last run gave it.
    outside = SourceFactory(name="not-in-the-run", reliability=0.9, reliability_low=0.8, reliability_high=0.95)
    run, _, sources = collusion_run(estimator="iwmv", alpha=1000.0, beta=1000.0)
    summary = finish_run(run)
    for score in ReliabilityScore.objects.filter(run=run):
        assert score.low <= score.reliability <= score.high, (score.low, score.reliability, score.high)
    for row in as_list(summary["scores"]):
        assert row["low"] <= row["reliability"] <= row["high"]
    honest = sources["honest-a"]
    honest.refresh_from_db()
    assert honest.reliability is not None and honest.reliability_low is not None and honest.reliability_high is not None
    assert honest.reliability_low <= honest.reliability <= honest.reliability_high
    outside.refresh_from_db()
    assert (outside.reliability, outside.reliability_low, outside.reliability_high) == (0.9, 0.8, 0.95)
    assert not ReliabilityScore.objects.filter(source=outside).exists()
