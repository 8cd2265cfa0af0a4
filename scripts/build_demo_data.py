#!/usr/bin/env python
"""Derive the demo corpus shipped in sources/demo_data/ from ../shared/data (PoisonedRAG).

Each demo source gets, for a share of the questions (its coverage), either the
"factual twins" of PoisonedRAG's adversarial passages (the incorrect answer replaced by
the correct one) or the adversarial passages themselves, with probability equal to its
reliability. The unreliable sources collude (they push the same wrong answer), as in
PoisonedRAG's attack. Nothing is hand-written: every text comes from the data.

PoisonedRAG (Zou et al., 2024), github.com/sleeepeer/PoisonedRAG, MIT licence; the
questions come from Natural Questions (CC BY-SA 3.0) and HotpotQA (CC BY-SA 4.0).

Usage: python scripts/build_demo_data.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bench.datasets import load_poisonedrag  # noqa: E402
from core.bench.demo import subject_of  # noqa: E402

# name, kind, reliability (a number, or one per subject: core.bench.demo.subject_of), coverage, description
SOURCES: list[tuple[str, str, float | dict[str, float], float, str]] = [
    ("Reference Desk", "reference", 0.95, 0.75, "A curated reference work."),
    ("Wire Service", "news", 0.90, 0.70, "A news agency's fact boxes."),
    ("Campus Quiz Club", "dataset", 0.80, 0.65, "Answers collected by a quiz club."),
    (
        "Forum Chatter",
        "social",
        {"entertainment": 0.90, "general knowledge": 0.20},
        0.65,
        "Posts from an open discussion forum: film, TV and music fans who know their subject, and guess at the rest.",
    ),
    ("Trending Posts", "social", 0.15, 0.75, "Viral social media posts."),
    ("SEO Content Farm", "vendor", 0.10, 0.80, "Pages written to rank, not to inform."),
]
QUESTIONS = 120
ESTIMATION_QUERIES = 60
SEED = 20241030


def build(
    data_dir: Path,
    out_dir: Path,
    sources: list[tuple[str, str, float | dict[str, float], float, str]] | None = None,
    *,
    seed: int = SEED,
) -> dict[str, int]:
    """Write one JSONL file per source, manifest.json and queries.json into `out_dir`
    (`sources`: name, kind, reliability, coverage, description; default the demo's six)."""
    questions = load_poisonedrag(data_dir, subsets=("nq", "hotpotqa"))[:QUESTIONS]
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "seed": seed,
        "sources": [],
        "derived_from": "PoisonedRAG nq.json + hotpotqa.json (MIT)",
    }
    counts: dict[str, int] = {}
    for name, kind, reliability, coverage, description in sources or SOURCES:
        records = []
        by_subject = reliability if isinstance(reliability, dict) else {}
        for q in questions:
            if rng.random() >= coverage:
                continue
            factual = rng.random() < (
                by_subject[subject_of(q.question)] if by_subject else float(reliability)  # type: ignore[arg-type]  # a float when not a dict
            )
            wrong = q.wrong_answers[0]  # colluding misinformation: PoisonedRAG's incorrect answer
            passages = q.factual_docs if factual else q.misinfo_docs[wrong]
            for index, text in enumerate(passages[:3]):
                records.append({"title": f"{q.question[:80]} ({index + 1})", "text": text, "derived_from": q.qid})
        filename = name.lower().replace(" ", "-") + ".jsonl"
        with open(out_dir / filename, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        counts[name] = len(records)
        manifest["sources"].append(
            {
                "name": name,
                "kind": kind,
                "file": filename,
                "description": description,
                # Overall: the mean over the demo's questions of its reliability on each one's subject
                "simulated_reliability": round(
                    sum(by_subject[subject_of(q.question)] for q in questions) / len(questions), 3
                )
                if by_subject
                else reliability,
                "coverage": coverage,
                **({"topic_reliability": by_subject} if by_subject else {}),
            }
        )
    queries = [
        {
            "question": q.question,
            "reference_answers": q.gold,
            "tags": ["demo", q.qid.split(":")[0], f"topic:{subject_of(q.question)}"],
        }
        for q in questions[:ESTIMATION_QUERIES]
    ]
    ask = [{"question": q.question, "reference_answers": q.gold} for q in questions[ESTIMATION_QUERIES:]]
    (out_dir / "queries.json").write_text(json.dumps({"estimation": queries, "ask": ask}, indent=1, ensure_ascii=False))
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "sources" / "demo_data")
    args = parser.parse_args()
    for name, n in build(args.data, args.out).items():
        print(f"{name}: {n} documents")


if __name__ == "__main__":
    main()
