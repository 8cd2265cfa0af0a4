"""Run a benchmark configuration over seeds (or a sweep), and summarise it as JSON."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from core.bench.attribution import summarise_stages
from core.bench.datasets import load_questions
from core.bench.metrics import accuracy_interval, calibration, mean_ignoring_nan
from core.bench.qa import QAConfig, SeedRun, run_seed
from core.engine.text import is_idk
from core.engine.types import Embedder

Log = Callable[[str], None]


def summarise(config: QAConfig, runs: Sequence[SeedRun]) -> dict[str, Any]:
    """The JSON shape of one configuration: config, methods, reliability, per-seed details."""
    methods: dict[str, Any] = {}
    for name in runs[0].methods:
        per_seed = [r.methods[name] for r in runs]
        accuracy, (lo, hi) = accuracy_interval([m.correct for m in per_seed])
        questions = sum(len(m.correct) for m in per_seed)
        calibrated = (
            calibration([c for m in per_seed for c in m.confidences], [c for m in per_seed for c in m.correct])
            if all(len(m.confidences) == len(m.correct) for m in per_seed)
            else {"ece": float("nan"), "bins": []}
        )
        methods[name] = {
            "accuracy": accuracy,
            "ci95": [lo, hi],
            "ece": calibrated["ece"],
            "reliability_diagram": calibrated["bins"],
            "calls_per_question": sum(m.calls for m in per_seed) / questions,
            "tokens_per_question": sum(m.tokens for m in per_seed) / questions,
            "seconds_per_question": sum(m.seconds for m in per_seed) / questions,
            "per_seed_accuracy": [sum(m.correct) / len(m.correct) for m in per_seed],
            # Wrong answers by the stage that lost them, over all seeds (core.bench.attribution)
            "lost_at": summarise_stages([s for m in per_seed for s in m.stages]),
            "abstained": sum(is_idk(a) for m in per_seed for a in m.answers) / questions,
            # Wrong answers at confidence 0.8 or more that carry no note (the issue-36 check)
            "wrong_confident_unwarned": sum(
                (not ok) and conf >= 0.8 and not warned
                for m in per_seed
                for ok, conf, warned in zip(m.correct, m.confidences, m.warned, strict=False)
            ),
            "outside_abstained_or_warned": [
                sum(m.outside_abstained_or_warned for m in per_seed),
                sum(m.outside for m in per_seed),
            ],
            # Every wrong answer with its stage and votes, per seed (core.bench.qa.wrong_record)
            "wrong_answers": [{"seed": r.seed, **w} for r in runs for w in r.methods[name].wrong],
        }
    correlations = [r.reliability_correlation for r in runs]
    return {
        "config": {**asdict(config), "methods": list(runs[0].methods), "seeds": [r.seed for r in runs]},
        "methods": methods,
        # What the sources allow (a perfect reader; core.bench.attribution), mean over seeds
        "ceilings": {key: sum(r.ceilings.get(key, 0.0) for r in runs) / len(runs) for key in runs[0].ceilings},
        "reliability": {
            "pearson": mean_ignoring_nan([c["pearson"] for c in correlations]),
            "spearman": mean_ignoring_nan([c["spearman"] for c in correlations]),
            # Estimated against true reliability over source x (true) topic cells: what each
            # source is weighed with on a topic's questions (core.bench.qa.topic_reliability_cells)
            "topic_pearson": mean_ignoring_nan([r.topic_correlation["pearson"] for r in runs]),
            # The same with each question's topics as ra-rag's vote read them (its text and its
            # sources' answers); NaN when ra-rag was not run or the runs found no topics
            "topic_pearson_answers": mean_ignoring_nan([r.topic_correlation_answers["pearson"] for r in runs]),
            "per_seed": [
                {
                    "seed": r.seed,
                    "pearson": c["pearson"],
                    "spearman": c["spearman"],
                    "true": {str(k): v for k, v in r.true_reliability.items()},
                    "estimated_accuracy": {str(k): v for k, v in r.estimated_accuracy.items()},
                    "estimated_weight": {str(k): v for k, v in r.estimated_weight.items()},
                    "answers": {str(k): v for k, v in r.answers_count.items()},
                    "topic_pearson": r.topic_correlation["pearson"],
                    "topic_cells": [
                        {"source": sid, "topic": topic, "estimated": round(est, 4), "true": true}
                        for sid, topic, est, true in r.topic_cells
                    ],
                    "topics": [{k: t[k] for k in ("key", "name", "size")} for t in r.topics],
                }
                for r, c in zip(runs, correlations, strict=True)
            ],
        },
        "copy_detection": _copy_detection(runs),
        "estimation": {
            "calls_per_seed": sum(r.estimation_calls for r in runs) / len(runs),
            # Whether agreement identified each seed's estimate (false: it rested on which group
            # of sources is right, and both groups got one equal vote).
            "identified_per_seed": [r.identified for r in runs],
            "gold_per_seed": [r.gold_used for r in runs],
            # The answer calibration fitted on each seed's checked queries ({} without gold).
            "calibration_per_seed": [r.calibration for r in runs],
            "seconds_per_seed": sum(r.estimation_seconds for r in runs) / len(runs),
        },
        "test_questions_per_seed": runs[0].n_test,
        "documents_per_seed": sum(r.n_documents for r in runs) / len(runs),
    }


def _copy_detection(runs: Sequence[SeedRun]) -> dict[str, Any]:
    """Precision and recall of the pairs the estimator flagged as dependent (probability >=
    0.5) against the truly colluding pairs (two misinformation sources pushing one answer),
    and of those the product shows as copying (SeedRun.shown_pairs)."""
    flagged = sum(len(r.flagged_pairs) for r in runs)
    colluding = sum(len(r.colluding_pairs) for r in runs)
    hits = sum(len(set(r.flagged_pairs) & set(r.colluding_pairs)) for r in runs)
    # As the product shows them (SeedRun.shown_pairs): a seed whose estimate agreement does not
    # identify shows its pairs as an unsettled group, not as copiers, and a pair with no false
    # answer in common is not shown (core.services.pages.copying).
    shown_flagged = sum(len(r.shown_pairs) for r in runs)
    shown_hits = sum(len(set(r.shown_pairs) & set(r.colluding_pairs)) for r in runs)
    return {
        "flagged": flagged,
        "colluding": colluding,
        "precision": hits / flagged if flagged else float("nan"),
        "recall": hits / colluding if colluding else float("nan"),
        "shown_as_copying": shown_flagged,
        "shown_precision": shown_hits / shown_flagged if shown_flagged else float("nan"),
        "shown_recall": shown_hits / colluding if colluding else float("nan"),
    }


def run_qa(
    config: QAConfig, seeds: Sequence[int], embedder: Embedder, data_dir: Path, log: Log = lambda _m: None
) -> dict[str, Any]:
    config = replace(config, data_dir=str(data_dir))
    questions = [] if config.dataset == "demo" else load_questions(config.dataset, data_dir)
    runs = []
    for seed in seeds:
        started = time.perf_counter()
        run = run_seed(config, questions, embedder, seed)
        runs.append(run)
        best = {m: f"{sum(r.correct) / len(r.correct):.3f}" for m, r in run.methods.items()}
        log(f"seed {seed}: {time.perf_counter() - started:.1f}s {best}")
    result = summarise(config, runs)
    result["config"]["questions_loaded"] = len(questions)
    return result


def run_sweep(
    config: QAConfig,
    parameter: str,
    values: Sequence[int | float],
    seeds: Sequence[int],
    embedder: Embedder,
    data_dir: Path,
    log: Log = lambda _m: None,
) -> dict[str, Any]:
    """One summary per value of ``parameter`` (e.g. adversaries 1..7)."""
    if not hasattr(config, parameter):
        raise ValueError(f"cannot sweep {parameter!r}")
    started = time.perf_counter()
    points = []
    for value in values:
        log(f"{parameter} = {value}")
        changes: dict[str, Any] = {parameter: value}  # the swept field, named at run time: replace() cannot check it
        summary = run_qa(replace(config, **changes), seeds, embedder, data_dir, log)
        points.append({"value": value, **summary})
    return {
        "config": {**asdict(config), "sweep": parameter, "values": list(values), "seeds": list(seeds)},
        "sweep": {"parameter": parameter, "points": points},
        "methods": points[-1]["methods"] if points else {},
        "reliability": {
            "pearson": mean_ignoring_nan([p["reliability"]["pearson"] for p in points]),
            "spearman": mean_ignoring_nan([p["reliability"]["spearman"] for p in points]),
        },
        "seconds": time.perf_counter() - started,
    }


def json_safe(value: object) -> object:
    """NaN (an undefined correlation) becomes null so the file is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
