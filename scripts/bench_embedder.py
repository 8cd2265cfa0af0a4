"""Extra-embedder micro-benchmark: prepare, load, encode speed and memory of a packaged
embedder (core.engine.backends.embedder_files.EMBEDDERS) beside the retrieval embedder.

Prepares the embedder into the models folder (a no-op when prepared), loads it as the
product does (load_embedder), then encodes the demo corpus's passages (sources/demo_data,
about 35 words each) and the same text cut into chunks of about 120 words (the ingestion
chunk size), after one warm-up batch; then CrEst-sized calls: 10 passages at a time (the
pooled top-k of crest-bbx). The packaged MiniLM is loaded and measured first, as a worker
has it (unless --only: then the extra embedder's load includes importing torch). No
Django, no database.

    /usr/bin/time -v .venv/bin/python scripts/bench_embedder.py [KEY] [--models-dir var/models] [--poisonedrag N]

--poisonedrag N adds whether the extra embedder changes CrEst's credibility of poisoned
against clean passages (see credibility_auroc).

The numbers in docs/models.md come from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.engine.backends.embedder_files import EMBEDDERS, load_embedder, prepare
from core.engine.backends.embeddings import get_embedder
from core.engine.types import Embedder

DEMO = Path(__file__).resolve().parents[1] / "sources" / "demo_data"


def peak_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def rss_mb() -> int:
    """The current resident set (Linux), else the peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return peak_rss_mb()


def demo_passages(limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted(DEMO.glob("*.jsonl")):
        texts.extend(json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip())
    return texts[:limit]


def chunks_of(texts: list[str], words: int) -> list[str]:
    flat = " ".join(texts).split()
    return [" ".join(flat[i : i + words]) for i in range(0, len(flat) - words + 1, words)]


def speed(embedder: Embedder, texts: list[str]) -> float:
    embedder.encode(texts[:8])  # warm-up
    started = time.perf_counter()
    embedder.encode(texts)
    return len(texts) / (time.perf_counter() - started)


def crest_calls(embedder: Embedder, texts: list[str], size: int = 10, calls: int = 10) -> float:
    seconds = []
    for i in range(calls):
        batch = texts[i * size : (i + 1) * size]
        started = time.perf_counter()
        embedder.encode(batch)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", nargs="?", default="all-mpnet-base-v2", choices=sorted(EMBEDDERS))
    parser.add_argument("--models-dir", default="var/models")
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--only", action="store_true", help="do not measure the packaged MiniLM")
    parser.add_argument(
        "--poisonedrag", type=int, default=0, metavar="N", help="also CrEst's poisoned-passage AUROC on N questions"
    )
    args = parser.parse_args()
    torch_threads = os.environ.get("OMP_NUM_THREADS", "default")
    print(f"embedder {args.key}; load average at start {os.getloadavg()}; OMP_NUM_THREADS={torch_threads}")
    started = time.perf_counter()
    folder = prepare(args.key, args.models_dir)
    print(f"prepare (idempotent) {time.perf_counter() - started:.2f} s -> {folder}")
    passages = demo_passages(args.passages)
    long_chunks = chunks_of(passages, 120)
    words = statistics.mean(len(t.split()) for t in passages)
    print(f"{len(passages)} demo passages (mean {words:.0f} words), {len(long_chunks)} chunks of 120 words")
    # The retrieval embedder first, as in a worker (torch and sentence-transformers already
    # imported, MiniLM resident): the extra embedder's load time and memory are then its own.
    candidates: list[tuple[str, Callable[[], Embedder]]] = [] if args.only else [("all-MiniLM-L6-v2", get_embedder)]
    candidates.append((args.key, lambda: load_embedder(args.key, args.models_dir)))
    for name, load in candidates:
        rss_before = rss_mb()
        started = time.perf_counter()
        embedder = load()
        loaded = time.perf_counter() - started
        print(f"{name}: load {loaded:.1f} s, {embedder.dimension} d; RSS {rss_before} -> {rss_mb()} MB")
        short = speed(embedder, passages)
        longer = speed(embedder, long_chunks)
        crest = crest_calls(embedder, passages)
        print(
            f"{name}: {short:.1f} passages/s (demo, ~{words:.0f} words), {longer:.1f} chunks/s (120 words); "
            f"10 passages (one CrEst call) median {crest * 1000:.0f} ms; RSS now {rss_mb()} MB, "
            f"peak {peak_rss_mb()} MB"
        )
    if args.poisonedrag:
        credibility_auroc(args.key, args.models_dir, args.poisonedrag)
    print(f"load average at end {os.getloadavg()}")


def _auroc(clean: list[float], poisoned: list[float]) -> float:
    """P(a clean passage scores above a poisoned one), ties counted half (Mann-Whitney)."""
    pairs = [(c > p) + 0.5 * (c == p) for c in clean for p in poisoned]
    return sum(pairs) / len(pairs)


def credibility_auroc(key: str, models_dir: str, limit: int) -> None:
    """Does the extra embedder help CrEst tell poisoned passages from clean ones? Per
    PoisonedRAG question (nq subset, the benchmark's loader): the factual passages (3-5)
    plus 3 misinformation passages, either from 3 different wrong answers (non-colluding
    adversaries) or all for PoisonedRAG's own wrong answer (colluding). Every passage is one
    of PoisonedRAG's, so each poisoned passage has its factual twin (the same text with the
    correct answer) in the set, as in the benchmark's corpus: the hard case. The AUROC of the
    credibility of clean against poisoned passages, averaged over questions, with the
    context+lexical ensemble and with "all" (+ the extra embedder)."""
    from core.bench.datasets import load_poisonedrag
    from core.bench.paths import default_data_dir
    from core.engine.credibility import LexicalEmbedder, estimate_credibility

    questions = [q for q in load_poisonedrag(default_data_dir(), subsets=("nq",)) if len(q.misinfo_docs) >= 3]
    questions = questions[:limit]
    primary, extra = get_embedder(), load_embedder(key, models_dir)
    ensembles: dict[str, list[Embedder]] = {
        "context+lexical": [primary, LexicalEmbedder()],
        "all": [primary, LexicalEmbedder(), extra],
    }
    started = time.perf_counter()
    for setting in ("non-colluding", "colluding"):
        results: dict[str, list[float]] = {name: [] for name in ensembles}
        for q in questions:
            wrong = list(q.misinfo_docs.values())
            # non-colluding: passage i rewritten for wrong answer i (three different texts and answers)
            poisoned = (
                [docs[i % len(docs)] for i, docs in enumerate(wrong[:3])]
                if setting == "non-colluding"
                else wrong[0][:3]
            )
            texts = [*q.factual_docs, *poisoned]
            for name, embedders in ensembles.items():
                scores = estimate_credibility(texts, embedders).scores
                clean_scores, poisoned_scores = scores[: len(q.factual_docs)], scores[len(q.factual_docs) :]
                results[name].append(_auroc(list(clean_scores), list(poisoned_scores)))
        summary = ", ".join(f"{name} {statistics.mean(v):.3f}" for name, v in results.items())
        print(f"PoisonedRAG nq, {len(questions)} questions, 3 {setting} poisoned passages: mean AUROC {summary}")
    print(f"credibility AUROC: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
