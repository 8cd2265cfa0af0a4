"""Engine micro-benchmark: RA-RAG latency and generator calls, IWMV against crowd-kit.

Runs entirely in memory (core.engine.steps.memory_retriever.InMemoryRetriever), no Django and no
database: the corpus is the paper's protocol on PoisonedRAG (core.bench.corpus: simulated
sources with reliability p_i from Beta(2w/(1-w), 2), coverage 0.6), embedded with the real
offline MiniLM (embeddings cached under var/cache/bench), answered by the offline
extractive reader with the offline NLI. Source weights are the true v_i = N*p_i - 1, so
the numbers measure answering, not estimation.

    .venv/bin/python scripts/bench_engine.py [--questions 30] [--seed 0]

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.bench.corpus import build_corpus, make_sources
from core.bench.datasets import BenchQuestion, load_questions
from core.bench.embedding_cache import cached_default_embedder
from core.bench.paths import default_cache_dir, default_data_dir
from core.bench.qa import build_retriever
from core.engine.backends.generation.extractive import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.reliability import get_estimator
from core.engine.reliability.iwmv import iwmv
from core.engine.reliability.weights import voting_weight
from core.engine.strategies import EngineContext, get_strategy
from core.engine.types import Embedder, SourceInfo


def context(
    n_sources: int, n_questions: int, seed: int, embedder: Embedder, questions: Sequence[BenchQuestion]
) -> tuple[EngineContext, list[str]]:
    sources = make_sources("beta", n_sources, 0, 0.6, seed)
    corpus = build_corpus(questions, sources, seed, estimation_queries=1, max_questions=n_questions + 1)
    infos = [
        SourceInfo(s.id, s.name, weight=voting_weight(s.reliability, n_sources), accuracy=s.reliability)
        for s in sources
    ]
    ctx = EngineContext(
        retriever=build_retriever(corpus, embedder),
        embedder=embedder,
        generator=ExtractiveReader(),
        nli=EmbeddingLexicalNLI(embedder),
        sources=infos,
    )
    asked = [corpus.question(qid).question for qid in corpus.test_ids]
    return ctx, asked


def run_strategy(name: str, ctx: EngineContext, questions: list[str], repeats: int = 3) -> tuple[float, float]:
    """Median over questions of the best of `repeats` timings (the machine is shared, so
    single millisecond timings are noisy), and mean generator calls per question."""
    strategy = get_strategy(name)
    params = parse_params(strategy.Params, {}, {"kappa": 4})
    strategy.answer_checked(questions[0], ctx, params)  # warm-up
    seconds, calls = [], []
    for q in questions:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            result = strategy.answer_checked(q, ctx, params)
            best = min(best, time.perf_counter() - started)
        seconds.append(best)
        calls.append(result.stats.calls)
    return statistics.median(seconds), statistics.mean(calls)


def synthetic_votes(
    n_queries: int, n_sources: int, seed: int, n_labels: int = 5, coverage: float = 0.6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries x sources labels (-1 = IDK), the true label per query, and p_i ~ Beta(3, 2).

    The true label is drawn per query (a constant truth makes DawidSkene's class-conditional
    confusion matrices unidentifiable); a wrong answer is uniform over the other labels."""
    rng = np.random.default_rng(seed)
    p = rng.beta(3.0, 2.0, size=n_sources)
    truth = rng.integers(0, n_labels, size=n_queries)
    answers = rng.random((n_queries, n_sources)) < coverage
    correct = rng.random((n_queries, n_sources)) < p[None, :]
    wrong = (truth[:, None] + rng.integers(1, n_labels, size=(n_queries, n_sources))) % n_labels
    labels = np.where(correct, truth[:, None], wrong)
    labels[~answers] = -1
    return labels, truth, p


def truth_discovery(n_queries: int, n_sources: int, seed: int) -> list[tuple[str, float, float, float]]:
    import pandas as pd
    from scipy.stats import spearmanr

    from core.bench.crowd import dawid_skene_probas, wawa_fit_predict

    labels, truth, p = synthetic_votes(n_queries, n_sources, seed)
    rows: list[tuple[str, float, float, float]] = []
    started = time.perf_counter()
    result = iwmv(labels)
    seconds = time.perf_counter() - started
    estimate = np.array([-1 if a is None else a for a in result.answers])
    rows.append(
        (
            "IWMV (core.engine.reliability.iwmv)",
            seconds,
            float((estimate == truth).mean()),
            float(spearmanr(result.accuracies, p)[0]),
        )
    )

    for name in ("onecoin", "accucopy", "truthfinder"):
        estimator = get_estimator(name)
        started = time.perf_counter()
        found = estimator.estimate(labels)
        seconds = time.perf_counter() - started
        guessed = np.array([-1 if a is None else a for a in found.answers])
        rows.append(
            (
                f"{name} (core.engine.reliability)",
                seconds,
                float((guessed == truth).mean()),
                float(spearmanr(found.accuracies, p)[0]),
            )
        )

    q, s = np.nonzero(labels >= 0)
    frame = pd.DataFrame({"task": q, "worker": s, "label": labels[q, s]})
    started = time.perf_counter()
    probas = dawid_skene_probas(frame)
    seconds = time.perf_counter() - started
    predicted = probas.idxmax(axis=1).reindex(range(n_queries))
    rows.append(("crowd-kit DawidSkene", seconds, float((predicted.to_numpy() == truth).mean()), float("nan")))
    started = time.perf_counter()
    wawa_labels, skills = wawa_fit_predict(frame)
    seconds = time.perf_counter() - started
    predicted = wawa_labels.reindex(range(n_queries))
    skill = skills.reindex(range(n_sources)).fillna(0).to_numpy()
    rows.append(
        ("crowd-kit Wawa", seconds, float((predicted.to_numpy() == truth).mean()), float(spearmanr(skill, p)[0]))
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=30, help="questions asked per configuration")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    embedder = cached_default_embedder(default_cache_dir())
    questions = load_questions("poisonedrag", default_data_dir())

    print("## Ask latency: ra-rag (kappa 4) vs vanilla-rag (median over questions of best-of-3 seconds)\n")
    print("| sources | ra-rag s | vanilla-rag s | ratio (goal <= 2.5) |")
    print("|---:|---:|---:|---:|")
    latency: dict[int, tuple[float, float]] = {}
    calls: dict[int, tuple[float, float]] = {}
    for n in (5, 9, 10, 20):
        ctx, asked = context(n, args.questions, args.seed, embedder, questions)
        rr_s, rr_calls = run_strategy("ra-rag", ctx, asked)
        if n in (9, 20):
            va_s, _ = run_strategy("vanilla-rag", ctx, asked)
            latency[n] = (rr_s, va_s)
            print(f"| {n} | {rr_s:.4f} | {va_s:.4f} | {rr_s / va_s:.2f} |", flush=True)
        if n in (5, 10, 20):
            _, all_calls = run_strategy("ra-rag-all", ctx, asked)
            calls[n] = (rr_calls, all_calls)

    print("\n## Generator calls per question: kappa-RRSS (ra-rag, kappa 4) vs every source (ra-rag-all)\n")
    print("| sources | with kappa-RRSS | without | fewer (goal >= 50% at 20) |")
    print("|---:|---:|---:|---:|")
    for n, (with_k, without) in calls.items():
        print(f"| {n} | {with_k:.2f} | {without:.2f} | {100 * (1 - with_k / without):.0f}% |")

    print(
        "\n## Truth discovery on a synthetic 1,000-query x 100-source vote matrix (5 labels, coverage 0.6, p ~ Beta(3,2), true label drawn per query)\n"
    )
    print("| method | seconds | answer accuracy | Spearman(reliability, true p) |")
    print("|---|---:|---:|---:|")
    for name, seconds, accuracy, rho in truth_discovery(1000, 100, args.seed):
        rho_text = "n/a" if rho != rho else f"{rho:.3f}"
        print(f"| {name} | {seconds:.3f} | {accuracy:.3f} | {rho_text} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
