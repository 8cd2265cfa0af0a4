"""Local-LLM micro-benchmark: load time, per-prompt latency, memory and a small quality probe.

Loads a known GGUF model (core.engine.backends.generation.gguf_files.MODELS) through the
product's TransformersGenerator (assembling and converting it first if needed), then asks
the product's answer prompt on 5 questions whose passage holds the answer and 5 whose
passage is irrelevant, one at a time, then the answerable ones as one batch, then one
32-token free generation. No Django, no database.

    /usr/bin/time -v .venv/bin/python scripts/bench_llm.py [KEY] [--models-dir var/models]

The numbers in docs/models.md come from this script.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.engine.backends.generation import GenerationRequest
from core.engine.backends.generation.gguf_files import DEFAULT_MODEL, MODELS
from core.engine.backends.generation.local_transformers import TransformersGenerator
from core.engine.text import answer_contains_gold, is_idk

ANSWERABLE = [
    (
        "who sang i can't help falling in love with you",
        '"Can\'t Help Falling in Love" is a song recorded by American singer Elvis Presley for the '
        "album Blue Hawaii (1961).",
        "Elvis Presley",
    ),
    (
        "when did the first world war end",
        "World War I ended with the armistice of 11 November 1918, after four years of fighting on the Western Front.",
        "1918",
    ),
    (
        "what is the largest moon of saturn",
        "Titan is the largest moon of Saturn and the second-largest natural satellite in the Solar System.",
        "Titan",
    ),
    (
        "who painted the mona lisa",
        "The Mona Lisa is a half-length portrait painting by Italian artist Leonardo da Vinci, begun around 1503.",
        "Leonardo da Vinci",
    ),
    (
        "what is the chemical symbol for gold",
        "Gold is a chemical element with the symbol Au (from Latin aurum) and atomic number 79.",
        "Au",
    ),
]
IRRELEVANT = [
    ("who is the author of the hobbit", "The Amazon rainforest covers much of the Amazon basin of South America."),
    ("what is the capital of australia", "The penguin is a flightless bird living mostly in the Southern Hemisphere."),
    (
        "how many players are on a basketball team on the court",
        "Photosynthesis converts carbon dioxide and water into glucose in chloroplasts.",
    ),
    (
        "when was the eiffel tower built",
        "The Great Barrier Reef is the world's largest coral reef system, off Queensland.",
    ),
    ("who discovered penicillin", "Mount Kilimanjaro is a dormant volcano in Tanzania with three volcanic cones."),
]


def peak_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def timed(generator: TransformersGenerator, requests: list[GenerationRequest]) -> tuple[float, list[str], int]:
    started = time.perf_counter()
    out = generator.generate(requests)
    return time.perf_counter() - started, [g.text for g in out], sum(g.completion_tokens for g in out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", nargs="?", default=DEFAULT_MODEL, choices=sorted(MODELS))
    parser.add_argument("--models-dir", default="var/models")
    args = parser.parse_args()
    print(f"model {args.key}; load average at start {os.getloadavg()}")
    generator = TransformersGenerator(args.key, models_dir=args.models_dir, max_new_tokens=32)
    started = time.perf_counter()
    generator.white_box()
    info = {k: round(v, 1) if isinstance(v, float) else v for k, v in generator.load_info.items()}
    print(f"load {time.perf_counter() - started:.1f} s {info}; peak RSS {peak_rss_mb()} MB")

    latencies: list[float] = []
    right = abstained = 0
    for question, passage, gold in ANSWERABLE:
        seconds, (text,), _ = timed(generator, [GenerationRequest(question, [passage])])
        latencies.append(seconds)
        right += answer_contains_gold(text, [gold])
        print(f"  answerable  {seconds:6.2f} s  {text!r}")
    for question, passage in IRRELEVANT:
        seconds, (text,), _ = timed(generator, [GenerationRequest(question, [passage])])
        latencies.append(seconds)
        abstained += is_idk(text)
        print(f"  irrelevant  {seconds:6.2f} s  {text!r}")
    print(
        f"single prompts: median {statistics.median(latencies):.2f} s (min {min(latencies):.2f}, "
        f"max {max(latencies):.2f}); right {right}/{len(ANSWERABLE)}; "
        f"I don't know on irrelevant {abstained}/{len(IRRELEVANT)}"
    )
    batch = [GenerationRequest(q, [p]) for q, p, _ in ANSWERABLE]
    seconds, texts, _ = timed(generator, batch)
    print(f"batch of {len(batch)}: {seconds:.2f} s ({seconds / len(batch):.2f} s per prompt) {texts}")
    free = GenerationRequest("", (), prompt="Write three sentences about the history of Rome.")
    seconds, _, tokens = timed(generator, [free])
    print(f"free generation: {tokens} tokens in {seconds:.2f} s")
    print(f"peak RSS {peak_rss_mb()} MB; load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
