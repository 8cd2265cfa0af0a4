"""LLM-written fact-checking queries against the curated query set: do they yield the same
source reliabilities? (not a test)

    .venv/bin/python scripts/bench_querygen.py --documents 40 --out var/bench/querygen.json

On a SCRATCH database ``bench_querygen`` (dropped and recreated; never the dev database):

1. ingests the six demo sources (sources/demo_data) with the product's ingestion;
2. the curated set: the demo's 60 estimation questions (written from PoisonedRAG's
   questions, not by a model);
3. the generated set: `core.services.estimation.generate_queries` with the local LLM
   (--generator, in-process, bfloat16 by default) over --documents documents drawn evenly
   from every source (seeded): a question and a yes/no claim check per document, validated
   and de-duplicated by the product's own code;
4. estimates every source's reliability from each set with the same engine
   (`core.engine.estimation.estimate`, the configured answering path: the offline extractive
   reader and NLI, the product's default estimator, no gold answers), so the only difference
   is the query set.

Prints, per source, the simulated reliability (the demo's ground truth) and the two
estimates, the Spearman correlation of each with the truth, and of the two with each other.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

BENCH_DB = "bench_querygen"


def spearman(a: list[float], b: list[float]) -> float:
    from scipy.stats import spearmanr

    return round(float(spearmanr(a, b).statistic), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=40, help="documents the LLM writes queries from")
    parser.add_argument("--generator", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--models-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--llm-dtype", default="bfloat16", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()

    import scratch_db

    scratch_db.setup_django(BENCH_DB)
    from django.conf import settings

    from core.engine.backends.generation import TransformersGenerator
    from core.engine.estimation import estimate
    from core.models import FactQuery, QueryCollection
    from core.services.engine_context import build_context
    from core.services.estimation import generate_queries
    from runtime.backends import configured_embedder
    from sources.models import Document, Source
    from sources.services import ingest_files

    demo = ROOT / "sources" / "demo_data"
    manifest = json.loads((demo / "manifest.json").read_text())
    truth: dict[int, float] = {}
    embedder = configured_embedder()
    for entry in manifest["sources"]:
        source = Source.objects.create(name=entry["name"], kind=entry["kind"])
        [outcome] = ingest_files(source, [demo / entry["file"]], embedder)
        assert not outcome.error, outcome.error
        truth[source.pk] = entry["simulated_reliability"]

    curated = [q["question"] for q in json.loads((demo / "queries.json").read_text())["estimation"]]

    rng = random.Random(args.seed)
    per_source = max(1, args.documents // len(truth))
    documents = []
    for source_id in sorted(truth):
        ids = sorted(Document.objects.filter(source_id=source_id).values_list("pk", flat=True))
        documents += list(Document.objects.filter(pk__in=rng.sample(ids, min(per_source, len(ids)))))
    generator = TransformersGenerator(
        args.generator, max_new_tokens=64, models_dir=args.models_dir, dtype=args.llm_dtype
    )
    query_set = QueryCollection.objects.create(name="generated")
    started = time.perf_counter()
    generated = generate_queries(documents, query_set, generator)
    generation_s = time.perf_counter() - started
    by_origin = {
        origin: FactQuery.objects.filter(query_set=query_set, origin=origin).count()
        for origin in (FactQuery.Origin.GENERATED, FactQuery.Origin.YES_NO)
    }
    print(f"{len(generated)} queries from {len(documents)} documents in {generation_s:.0f} s: {by_origin}", flush=True)

    ctx = build_context()
    estimator = settings.RELIABILITY_ESTIMATOR
    results: dict[str, Any] = {}
    sets = {
        "curated": curated,
        "generated": [q.question for q in generated],
        # The extractive reader answers a span, never "yes": the question form alone is the
        # fair comparison with an offline answering path.
        "generated_questions": [q.question for q in generated if q.origin == FactQuery.Origin.GENERATED],
    }
    for name, questions in sets.items():
        started = time.perf_counter()
        result = estimate(questions, ctx, estimator=estimator)
        accuracy = {sid: s.accuracy for sid, s in zip(result.source_ids, result.reliability.sources, strict=True)}
        results[name] = {
            "queries": len(questions),
            "seconds": round(time.perf_counter() - started, 1),
            "accuracy": {str(sid): round(accuracy[sid], 3) for sid in sorted(truth)},
            "spearman_with_truth": spearman([truth[s] for s in sorted(truth)], [accuracy[s] for s in sorted(truth)]),
        }
    ids = sorted(truth)
    names = dict(Source.objects.values_list("pk", "name"))
    agreement = spearman(
        [results["curated"]["accuracy"][str(s)] for s in ids], [results["generated"]["accuracy"][str(s)] for s in ids]
    )
    report = {
        "generator": f"{args.generator} ({args.llm_dtype}, transformers in-process)",
        "answering": f"{settings.GENERATOR_BACKEND} reader, offline NLI, estimator {estimator}, no gold",
        "documents": len(documents),
        "generation_s": round(generation_s, 1),
        "generated_by_origin": by_origin,
        "examples": [q.question for q in generated[:8]],
        "results": results,
        "spearman_curated_vs_generated": agreement,
        "load_average": os.getloadavg()[0],
    }
    print(f"\nEstimator {estimator}, answering with the {settings.GENERATOR_BACKEND} reader (no gold answers)")
    print("| source | simulated reliability | curated queries | LLM-written, all | LLM-written, questions only |")
    print("|---|---:|---:|---:|---:|")
    for s in ids:
        print(
            f"| {names[s]} | {truth[s]} | " + " | ".join(str(results[name]["accuracy"][str(s)]) for name in sets) + " |"
        )
    print("| Spearman with the truth | | " + " | ".join(str(results[n]["spearman_with_truth"]) for n in sets) + " |")
    print("| queries | | " + " | ".join(str(results[n]["queries"]) for n in sets) + " |")
    print(f"Spearman between the curated and the all-generated estimates: {agreement}")
    scratch_db.write_result(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
