"""Measure the offline extractive reader on PoisonedRAG questions.

For every question: adversarial passages (its adv_texts) should yield the incorrect
answer; "factual" twins (incorrect answer replaced by the correct one, case-insensitive,
on word boundaries) should yield the correct answer; passages of another question should
yield "I don't know". Prints containment accuracy per dataset. For yes/no questions the twin
is usually identical to the adversarial passages (they rarely contain the word "yes"/"no"),
so a reader can get at most one of the two right; "factual_non_yes_no" leaves them out.

RAMDocs (--ramdocs): every document is read alone with its question. A "correct" or
"misinfo" document should yield the answer it supports ("answer_in_doc" is the share whose
answer occurs in the text at all, the ceiling for an extractive reader); a "noise" document
should ideally yield "I don't know".

    .venv/bin/python scripts/eval_reader.py [--passages 3] [--verbose] [--only ramdocs]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.engine.backends.generation.extractive import ExtractiveReader
from core.engine.text import answer_contains_gold, is_idk

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "poisonedrag"
RAMDOCS = Path(__file__).resolve().parents[2] / "shared" / "data" / "ramdocs" / "RAMDocs_test.jsonl"
_YES_NO = {"yes", "no", "true", "false"}


def factual_twin(text: str, incorrect: str, correct: str) -> str:
    pattern = re.compile(rf"(?<!\w){re.escape(incorrect)}(?!\w)", re.IGNORECASE)
    return pattern.sub(correct, text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--ramdocs", type=Path, default=RAMDOCS)
    parser.add_argument("--only", choices=("poisonedrag", "ramdocs"))
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    reader = ExtractiveReader()
    if args.only != "ramdocs":
        eval_poisonedrag(reader, args)
    if args.only != "poisonedrag" and args.ramdocs.exists():
        eval_ramdocs(reader, args)


def eval_poisonedrag(reader: ExtractiveReader, args: argparse.Namespace) -> None:
    for name in ("nq", "hotpotqa", "msmarco"):
        items = list(json.loads((args.data / f"{name}.json").read_text()).values())
        hits = {"factual": 0, "adversarial": 0, "idk": 0, "factual_nyn": 0}
        n_nyn = 0
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
            if good.lower() not in _YES_NO and bad.lower() not in _YES_NO:
                n_nyn += 1
                hits["factual_nyn"] += answer_contains_gold(a_fact, good)
            if args.verbose and not (
                answer_contains_gold(a_fact, good) and answer_contains_gold(a_adv, bad) and is_idk(a_other)
            ):
                print(f"  [{name}] {q!r} gold={good!r}/{bad!r} -> {a_fact!r} / {a_adv!r} / {a_other!r}")
        n = len(items)
        print(
            f"{name}: n={n} factual={hits['factual'] / n:.1%} "
            f"adversarial={hits['adversarial'] / n:.1%} idk_on_other={hits['idk'] / n:.1%} "
            f"factual_non_yes_no={hits['factual_nyn'] / max(n_nyn, 1):.1%} (n={n_nyn})"
        )


def eval_ramdocs(reader: ExtractiveReader, args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in args.ramdocs.read_text().splitlines() if line.strip()]
    hits: dict[str, int] = {}
    totals: dict[str, int] = {}
    present: dict[str, int] = {}
    for row in rows:
        q = row["question"]
        for doc in row["documents"]:
            kind, text = doc["type"], doc["text"]
            answer = reader.answer(q, [text])
            totals[kind] = totals.get(kind, 0) + 1
            if kind == "noise":
                ok = is_idk(answer)
            else:
                ok = answer_contains_gold(answer, doc["answer"])
                present[kind] = present.get(kind, 0) + answer_contains_gold(text, doc["answer"])
            hits[kind] = hits.get(kind, 0) + ok
            if args.verbose and not ok and kind != "noise":
                print(f"  [ramdocs/{kind}] {q!r} gold={doc['answer']!r} -> {answer!r}")
    parts = []
    for kind in ("correct", "misinfo", "noise"):
        n = totals.get(kind, 0)
        if not n:
            continue
        label = "idk" if kind == "noise" else "answer"
        part = f"{kind}_{label}={hits[kind] / n:.1%} (n={n}"
        if kind in present:
            part += f", answer_in_doc={present[kind] / n:.1%}"
        parts.append(part + ")")
    print(f"ramdocs: questions={len(rows)} " + " ".join(parts))


if __name__ == "__main__":
    main()
