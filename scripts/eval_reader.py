"""Measure the offline extractive reader on PoisonedRAG questions.

For every question: adversarial passages (its adv_texts) should yield the incorrect
answer; "factual" twins (incorrect answer replaced by the correct one, case-insensitive,
on word boundaries) should yield the correct answer; passages of another question should
yield "I don't know". Prints containment accuracy per dataset.

    .venv/bin/python scripts/eval_reader.py [--passages 3] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.generation.extractive import ExtractiveReader  # noqa: E402
from core.text import answer_contains_gold, is_idk  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "poisonedrag"


def factual_twin(text: str, incorrect: str, correct: str) -> str:
    pattern = re.compile(rf"(?<!\w){re.escape(incorrect)}(?!\w)", re.IGNORECASE)
    return pattern.sub(correct, text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    reader = ExtractiveReader()
    for name in ("nq", "hotpotqa", "msmarco"):
        items = list(json.loads((args.data / f"{name}.json").read_text()).values())
        hits = {"factual": 0, "adversarial": 0, "idk": 0}
        for i, item in enumerate(items):
            q, good, bad = item["question"], item["correct answer"], item["incorrect answer"]
            adv = item["adv_texts"][: args.passages]
            fact = [factual_twin(t, bad, good) for t in adv]
            other = items[(i + 1) % len(items)]["adv_texts"][: args.passages]
            a_fact, a_adv = reader.answer(q, fact), reader.answer(q, adv)
            a_other = reader.answer(q, other)
            hits["factual"] += answer_contains_gold(a_fact, good)
            hits["adversarial"] += answer_contains_gold(a_adv, bad)
            hits["idk"] += is_idk(a_other)
            if args.verbose and not (
                answer_contains_gold(a_fact, good) and answer_contains_gold(a_adv, bad)
                and is_idk(a_other)
            ):
                print(f"  [{name}] {q!r} gold={good!r}/{bad!r} -> {a_fact!r} / {a_adv!r} / {a_other!r}")
        n = len(items)
        print(
            f"{name}: n={n} factual={hits['factual'] / n:.1%} "
            f"adversarial={hits['adversarial'] / n:.1%} idk_on_other={hits['idk'] / n:.1%}"
        )


if __name__ == "__main__":
    main()
