"""Online updates: reference answers added after a run finished are added to its estimate as a
new run of kind "update", from the stored responses only, keeping the history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from core.engine.reliability import voting_weight
from core.models import EstimationRun, FactQuery, ReliabilityScore
from core.services.estimation import apply_gold_update, finish_run, resume_estimation_run
from core.services.pages.sources import reliability_history
from tests.factories import EstimationRunFactory, ReliabilityScoreFactory
from tests.services.collusion import COLLUDERS, FACTS, HONEST, collusion_run

GOLD_WEIGHT = 3.0  # core.engine.reliability.base.GOLD_WEIGHT


def finished_agreement_run():
    """The colluding world estimated from agreement alone (no query has reference answers yet)."""
    run, queries, sources = collusion_run(estimator="onecoin")
    finish_run(run)
    run.refresh_from_db()
    return run, queries, sources


def scores_by_name(run) -> dict[str, ReliabilityScore]:
    return {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}


def give_reference_answers(queries, indices) -> list[int]:
    for i in indices:
        FactQuery.objects.filter(pk=queries[i].pk).update(reference_answers=[FACTS[i][1]])
    return [queries[i].pk for i in indices]


def test_new_reference_answers_update_each_source_s_beta_posterior_in_a_new_run_that_keeps_the_history(
    db, embedder, curator
):
    run, queries, sources = finished_agreement_run()
    before = scores_by_name(run)
    assert all(before[name].agreements == 0 for name in HONEST)  # the colluders won every query
    ids = give_reference_answers(queries, [0, 1])

    update = apply_gold_update(run, ids, user=curator)

    assert (update.kind, update.parent_id, update.state) == ("update", run.pk, "succeeded")
    assert update.gold_queries == ids and update.params["update_queries"] == ids
    assert update.created_by == curator and set(update.sources.all()) == set(sources.values())
    after = scores_by_name(update)
    g = GOLD_WEIGHT
    for name in (*HONEST, *COLLUDERS):
        old, new = before[name], after[name]
        evidence = old.answers + 2.0  # answers + alpha + beta, no gold yet
        previous, hits = (0, 2) if name in HONEST else (2, 0)  # agreed with the run's answer / match gold
        expected = (old.reliability * evidence - previous + g * hits) / (evidence + (g - 1) * 2)
        assert new.reliability == pytest.approx(expected)
        assert (new.answers, new.agreements) == (10, old.agreements - previous + hits)
        assert (new.gold_answers, new.gold_agreements) == (2, hits)
    assert after["honest-a"].reliability > before["honest-a"].reliability
    assert after["colluder-x"].reliability < before["colluder-x"].reliability
    for name in ("honest-a", "colluder-x"):  # onecoin's log-odds weight of the new accuracy
        assert after[name].weight == pytest.approx(voting_weight(after[name].reliability, 5, scheme="log-odds"))
    assert after["colluder-x"].weight < before["colluder-x"].weight
    sources["honest-a"].refresh_from_db()
    assert sources["honest-a"].reliability == pytest.approx(after["honest-a"].reliability)
    history = reliability_history(sources["honest-a"])
    assert [(h["run_id"], h["kind"], h["gold_answers"]) for h in history] == [
        (run.pk, "full", 0),
        (update.pk, "update", 2),
    ]
    assert history[-1]["gold_accuracy"] == 1.0 and history[-1]["parent_run_id"] == run.pk


def test_an_update_of_an_update_adds_only_the_new_gold_queries_from_the_full_run_s_responses(db, embedder):
    run, queries, _ = finished_agreement_run()
    first = apply_gold_update(run, give_reference_answers(queries, [0]))
    give_reference_answers(queries, [1, 2])
    second = apply_gold_update(first)  # default: every query with reference answers not used yet
    assert second.parent_id == first.pk
    assert second.params["update_queries"] == [queries[1].pk, queries[2].pk]
    assert second.gold_queries == [queries[0].pk, queries[1].pk, queries[2].pk]
    honest = scores_by_name(second)["honest-a"]
    assert (honest.gold_answers, honest.gold_agreements) == (3, 3)
    with pytest.raises(ValidationError) as caught:
        apply_gold_update(second)
    assert "not used yet" in caught.value.message_dict["queries"][0]
    with pytest.raises(ValidationError) as caught:
        resume_estimation_run(second, reestimate=True)
    assert "incremental update" in caught.value.message_dict["run"][0]


def test_an_update_names_what_it_cannot_use(db, embedder):
    run, queries, _ = finished_agreement_run()
    with pytest.raises(ValidationError) as caught:
        apply_gold_update(run, [queries[0].pk])
    assert caught.value.message_dict["queries"] == [f"These queries have no reference answers: {queries[0].pk}."]
    with pytest.raises(ValidationError) as caught:
        apply_gold_update(run, [999999])
    assert "Not queries of run" in caught.value.message_dict["queries"][0]
    pending = EstimationRunFactory(query_set=run.query_set)
    with pytest.raises(ValidationError) as caught:
        apply_gold_update(pending)
    assert "has not succeeded" in caught.value.message_dict["run"][0]
    assert not EstimationRun.objects.filter(kind=EstimationRun.Kind.UPDATE).exists()


def test_an_update_of_an_older_run_leaves_a_newer_reliability_in_place(db, embedder):
    run, queries, sources = finished_agreement_run()
    source = sources["honest-a"]
    newer = EstimationRunFactory(succeeded=True, query_set=run.query_set, sources=[source])
    EstimationRun.objects.filter(pk=newer.pk).update(created_at=timezone.now() + timedelta(minutes=1))
    ReliabilityScoreFactory(run=newer, source=source, reliability=0.42)
    type(source).objects.filter(pk=source.pk).update(reliability=0.42)
    update = apply_gold_update(run, give_reference_answers(queries, [0]))
    source.refresh_from_db()
    assert source.reliability == 0.42
    assert scores_by_name(update)["honest-a"].reliability > scores_by_name(run)["honest-a"].reliability
    sources["colluder-x"].refresh_from_db()
    assert sources["colluder-x"].reliability == pytest.approx(scores_by_name(update)["colluder-x"].reliability)


def test_an_update_moves_only_the_topic_of_its_checked_queries(db, embedder):
    run, queries, sources = finished_agreement_run()
    scores = scores_by_name(run)
    half = len(queries) // 2
    cells = {
        str(s.source_id): [
            {"key": key, "accuracy": s.reliability, "low": s.low, "high": s.high, "answers": s.answers / 2}
            for key in ("t1", "t2")
        ]
        for s in scores.values()
    }
    run.topics = {
        "model": {
            "source": "clusters",
            "temperature": 0.05,
            "topics": [
                {"key": "t1", "name": "first", "size": half, "centroid": [1.0, 0.0], "prototypes": []},
                {"key": "t2", "name": "second", "size": len(queries) - half, "centroid": [0.0, 1.0], "prototypes": []},
            ],
        },
        "cells": cells,
        "queries": {str(q.pk): ("t1" if i < half else "t2") for i, q in enumerate(queries)},
        "unsettled": [],
    }
    run.save(update_fields=["topics"])
    update = apply_gold_update(run, give_reference_answers(queries, [0, 1]))  # both in t1
    honest = str(next(s.source_id for name, s in scores.items() if name in HONEST))
    colluder = str(next(s.source_id for name, s in scores.items() if name in COLLUDERS))
    moved = {c["key"]: c["accuracy"] for c in update.topics["cells"][honest]}
    before = {c["key"]: c["accuracy"] for c in run.topics["cells"][honest]}
    assert moved["t1"] > before["t1"] and moved["t2"] == before["t2"]
    fallen = {c["key"]: c["accuracy"] for c in update.topics["cells"][colluder]}
    was = {c["key"]: c["accuracy"] for c in run.topics["cells"][colluder]}
    assert fallen["t1"] < was["t1"] and fallen["t2"] == was["t2"]
    # The update is now the run the answers read their topics from.
    from core.services.topics import latest_topic_run

    assert latest_topic_run() == update
