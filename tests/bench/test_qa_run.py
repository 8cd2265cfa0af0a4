from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from core.bench.datasets import BenchQuestion
from core.bench.embedding_cache import CachedEmbedder
from core.bench.qa import CROWD_METHODS, QAConfig, crowd_answers, run_seed
from core.bench.runner import json_safe, summarise
from tests.bench.fakes import HashingEmbedder


def test_cached_embedder_embeds_each_text_once_across_calls_and_processes(tmp_path: Path) -> None:
    inner = HashingEmbedder()
    first = CachedEmbedder(inner, tmp_path)
    a = first.encode(["alpha beta", "gamma", "alpha beta"])
    assert inner.texts_encoded == 2
    second = CachedEmbedder(inner, tmp_path)  # a new process would open the same file
    b = second.encode(["gamma", "alpha beta"])
    assert inner.texts_encoded == 2
    assert np.allclose(a[1], b[0]) and np.allclose(a[0], b[1])


def test_crowd_methods_follow_the_sources_that_agree_with_the_others() -> None:
    votes = [
        [(1, "paris"), (2, "paris"), (3, "lyon")],
        [(1, "rome"), (2, "rome"), (3, "milan")],
        [(1, "berlin"), (3, "bonn")],
        [],
    ]
    for method in CROWD_METHODS:
        answers = crowd_answers(votes, method)
        assert answers[:3] == ["paris", "rome", "berlin"]
        assert answers[3] == "I don't know"


def test_a_seeded_run_reports_every_method_in_the_documented_json_shape(poisonedrag: list[BenchQuestion]) -> None:
    config = QAConfig(sources=5, adversaries=2, estimation_queries=20, max_questions=50)
    run = run_seed(config, poisonedrag, HashingEmbedder(), seed=0)
    methods = config.resolved_methods()
    assert {"ra-rag", "mv", "wmv-oracle", "dawid-skene", "wawa"} <= set(methods)
    assert list(run.methods) == methods
    assert all(len(m.correct) == 30 for m in run.methods.values())

    summary = json.loads(json.dumps(json_safe(summarise(config, [run]))))
    assert set(summary) >= {"config", "methods", "reliability"}
    for result in summary["methods"].values():
        assert set(result) >= {"accuracy", "ci95", "calls_per_question", "tokens_per_question", "seconds_per_question"}
        assert result["ci95"][0] <= result["accuracy"] <= result["ci95"][1]
    # MV asks every source holding a passage about the question (core.engine.steps.relevance):
    # not the ones left with another subject's passages only.
    assert 0 < summary["methods"]["mv"]["calls_per_question"] < 5
    assert summary["methods"]["ra-rag"]["calls_per_question"] <= summary["methods"]["mv"]["calls_per_question"]


def test_oracle_weighted_vote_beats_majority_vote_when_adversaries_are_the_majority(
    poisonedrag: list[BenchQuestion],
) -> None:
    config = QAConfig(sources=9, adversaries=6, estimation_queries=40, max_questions=140, methods=["mv", "wmv-oracle"])
    run = run_seed(config, poisonedrag, HashingEmbedder(), seed=1)
    accuracy = {m: sum(r.correct) / len(r.correct) for m, r in run.methods.items()}
    assert accuracy["wmv-oracle"] > accuracy["mv"]


def test_a_strategy_with_parameters_runs_as_its_own_method_beside_its_defaults(
    poisonedrag: list[BenchQuestion],
) -> None:
    config = QAConfig(
        sources=5, adversaries=2, estimation_queries=20, max_questions=40, methods=["ra-rag", "ra-rag:kappa=2"]
    )
    run = run_seed(config, poisonedrag, HashingEmbedder(), seed=0)
    assert list(run.methods) == ["ra-rag", "ra-rag:kappa=2"]
    calls = {name: m.calls / len(m.correct) for name, m in run.methods.items()}
    assert calls["ra-rag:kappa=2"] < calls["ra-rag"]  # kappa-RRSS asks fewer sources (ties at the cut stay whole)


def test_a_method_with_a_bad_parameter_is_refused_before_anything_runs() -> None:
    import pytest

    for methods, message in (
        (["ra-rag:kappa=0"], "kappa"),
        (["ra-rag:nonsense=1"], "Unknown parameter"),
        (["astute-rag:prompt"], "key=value"),
        (["no-such-strategy:k=1"], "unknown methods"),
        (["ra-rag:"], "no parameters after the colon"),
        (["mv", "mv"], "given twice"),
        (["ra-rag:kappa=3,tau=0.2", "ra-rag:tau=0.2, kappa=3"], "given twice"),
    ):
        with pytest.raises(ValueError, match=message):
            QAConfig(methods=methods).resolved_methods()


def test_a_colluding_majority_without_checks_shows_no_pair_as_copying_and_checks_show_the_colluders(
    poisonedrag: list[BenchQuestion],
) -> None:
    """Without checks the estimate follows the colluders and its copy detection flags honest
    pairs; the run is unidentified, so nothing is shown as copying. With the checks it proposes,
    the pairs shown are colluders."""
    base = QAConfig(sources=9, adversaries=5, collude=True, estimation_queries=40, max_questions=80, methods=["mv"])
    blind = run_seed(base, poisonedrag, HashingEmbedder(), seed=1)
    honest = {(a, b) for a, b in blind.flagged_pairs if (a, b) not in set(blind.colluding_pairs)}
    assert not blind.identified and honest  # copy detection flags honest pairs here ...
    assert blind.shown_pairs == []  # ... and none is shown as copying
    checked = run_seed(replace(base, active_gold=5), poisonedrag, HashingEmbedder(), seed=1)
    assert checked.identified and set(checked.shown_pairs) <= set(checked.flagged_pairs)
    # Every colluding pair is shown; most pairs shown are colluders (an honest source that held
    # the poisoned answer on several of these 40 queries can be paired with them).
    shown = set(checked.shown_pairs)
    assert set(checked.colluding_pairs) <= shown
    assert len(shown & set(checked.colluding_pairs)) >= 0.7 * len(shown)
    # One check at a time, as a curator answers them (estimated again after each): as many
    # checks, each chosen from the estimate the previous one made, and the run is settled too.
    stepwise = run_seed(replace(base, active_gold=5, checks_one_at_a_time=True), poisonedrag, HashingEmbedder(), seed=1)
    assert stepwise.gold_used == checked.gold_used == 5 and stepwise.identified


def test_a_colluding_minority_without_checks_is_identified_and_only_colluders_are_shown_copying(
    poisonedrag: list[BenchQuestion],
) -> None:
    """Three colluders of nine (issue 37): six independent sources reject their answers, so the
    run is identified without checks, RA-RAG beats majority vote, and the pairs shown as copying
    include every colluding pair."""
    config = QAConfig(
        sources=9, adversaries=3, collude=True, estimation_queries=40, max_questions=80, methods=["mv", "ra-rag"]
    )
    run = run_seed(config, poisonedrag, HashingEmbedder(), seed=1)
    assert run.identified
    assert set(run.colluding_pairs) <= set(run.shown_pairs)
    accuracy = {name: float(np.mean(m.correct)) for name, m in run.methods.items()}
    assert accuracy["ra-rag"] > accuracy["mv"] + 0.1
