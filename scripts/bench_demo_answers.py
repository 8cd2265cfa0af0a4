"""How right the product's answers are on the demo: the demo's held-out "ask" questions
(sources/demo_data/queries.json, each with reference answers; none of them is in the
estimation set) asked through the product (core.services.asking.ask_now: retrieval in
PostgreSQL, the configured generator, the offline NLI, the latest estimation run's
reliabilities), with each strategy in turn (not a test).

Run it against an instance that has the demo loaded and estimated (scripts/run.sh with a
DATA_DIR of its own), with the generator settings the instance runs with:

    DATA_DIR=var/demo-llm GENERATOR_BACKEND=ctranslate2 LLM_MODEL=qwen2.5-coder-0.5b-instruct-q4_k_m \\
        LLM_MODELS_DIR=var/models .venv/bin/python scripts/bench_demo_answers.py --out var/bench/demo-llm.json

Prints, per strategy, containment accuracy with its 95% Wilson interval, the expected
calibration error of the answers' confidence, mean confidence of right and wrong answers,
and median / p95 seconds; the JSON keeps every question's answer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bench import machine  # noqa: E402  (after the path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategies", nargs="+", default=["ra-rag", "mv", "vanilla-rag"])
    parser.add_argument("--questions", type=int, default=60, help="the first N ask questions")
    parser.add_argument(
        "--outside",
        type=int,
        default=10,
        help="also ask N PoisonedRAG questions from outside the demo's corpus with ra-rag (they should abstain or warn)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    import django

    django.setup()
    from core.bench.metrics import calibration, wilson_interval
    from core.engine.text import answer_contains_gold
    from core.services.asking import ask_now

    asks = json.loads((ROOT / "sources" / "demo_data" / "queries.json").read_text())["ask"][: args.questions]
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in args.strategies}
    for number, item in enumerate(asks, start=1):
        # Alternate the order so that no strategy always meets a warm cache.
        order = args.strategies if number % 2 else list(reversed(args.strategies))
        for name in order:
            started = time.perf_counter()
            question = ask_now(item["question"], strategy=name)
            seconds = time.perf_counter() - started
            right = answer_contains_gold(question.answer or "", item["reference_answers"])
            rows[name].append(
                {
                    "question": item["question"],
                    "reference_answers": item["reference_answers"],
                    "answer": question.answer,
                    "confidence": question.confidence,
                    "backend": question.backend,
                    "notes": list(question.notes or []),
                    "correct": right,
                    "seconds": round(seconds, 3),
                }
            )
        print(f"{number}/{len(asks)}", {n: rows[n][-1]["answer"] for n in args.strategies}, flush=True)

    outside_rows: list[dict[str, Any]] = []
    if args.outside:
        from core.bench.demo import load_demo_corpus
        from core.bench.paths import default_data_dir
        from core.engine.text import is_idk

        corpus = load_demo_corpus(default_data_dir())
        for qid in list(corpus.config["outside_ids"])[: args.outside]:  # type: ignore[call-overload]  # a list of ids
            started = time.perf_counter()
            question = ask_now(corpus.question(str(qid)).question, strategy="ra-rag")
            outside_rows.append(
                {
                    "question": question.text,
                    "answer": question.answer,
                    "confidence": question.confidence,
                    "notes": list(question.notes or []),
                    "abstained_or_warned": is_idk(question.answer or "") or bool(question.notes),
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
            print("outside:", outside_rows[-1]["question"], "->", outside_rows[-1]["answer"], flush=True)

    summary: dict[str, Any] = {}
    for name, items in rows.items():
        correct = [r["correct"] for r in items]
        confidences = [float(r["confidence"] or 0.0) for r in items]
        low, high = wilson_interval(sum(correct), len(correct))
        right_conf = [c for c, ok in zip(confidences, correct, strict=True) if ok]
        wrong_conf = [c for c, ok in zip(confidences, correct, strict=True) if not ok]
        durations = sorted(r["seconds"] for r in items)
        summary[name] = {
            "accuracy": sum(correct) / len(correct),
            "interval": [low, high],
            "ece": calibration(confidences, correct)["ece"],
            "mean_confidence_right": statistics.fmean(right_conf) if right_conf else None,
            "mean_confidence_wrong": statistics.fmean(wrong_conf) if wrong_conf else None,
            "median_seconds": statistics.median(durations),
            "p95_seconds": durations[min(len(durations) - 1, int(round(0.95 * (len(durations) - 1))))],
            "backend": items[0]["backend"] if items else "",
        }
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "processor": machine.cpu_model(),
            "cores": machine.cores(),
            "flags": machine.vector_flags(),
            # The instruction set CTranslate2 was told to use (it picks the best one otherwise).
            "ct2_isa": os.environ.get("CT2_FORCE_CPU_ISA", "auto"),
        },
        "questions": len(asks),
        "summary": summary,
        "rows": rows,
        "outside": {
            "asked": len(outside_rows),
            "abstained_or_warned": sum(r["abstained_or_warned"] for r in outside_rows),
            "rows": outside_rows,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print("| strategy | accuracy | 95% CI | ECE | mean conf. right / wrong | median / p95 s |")
    print("| --- | ---: | --- | ---: | --- | --- |")
    for name, s in summary.items():
        right_c = "-" if s["mean_confidence_right"] is None else f"{s['mean_confidence_right']:.2f}"
        wrong_c = "-" if s["mean_confidence_wrong"] is None else f"{s['mean_confidence_wrong']:.2f}"
        print(
            f"| {name} | {s['accuracy']:.3f} | [{s['interval'][0]:.2f}, {s['interval'][1]:.2f}] | {s['ece']:.3f} "
            f"| {right_c} / {wrong_c} | {s['median_seconds']:.2f} / {s['p95_seconds']:.2f} |"
        )
    if outside_rows:
        held = sum(bool(r["abstained_or_warned"]) for r in outside_rows)
        print(f"outside the corpus (ra-rag): {held} of {len(outside_rows)} abstained or warned")


if __name__ == "__main__":
    main()
