"""Question latency while bulk work shares the cores (issue 38 row 8), side by side in one run.

The product's default topology with the local LLM: the question worker runs the model
(CTranslate2, int8) on every core; the bulk worker (one pool process with a local LLM,
CELERY_WORKER_CONCURRENCY 1) runs the same model on every core too (tasks.signals gives each
pool process its share of the cores) while an estimation run generates its responses. Here, without the rest of the stack, one process
times answers of the question worker's size (a demo prompt, greedy, up to 32 new tokens) in
four settings, each with the same prompts:

- ``idle``: nothing else runs;
- ``bulk``: ``--bulk-processes`` background processes (1) generate continuously on their share
  of the cores, at the same CPU priority (what scripts/run.sh did);
- ``bulk-nice10`` / ``bulk-nice19``: the same background processes at nice 10 / 19 (what
  scripts/run.sh now gives the bulk worker: BULK_WORKER_NICE, default 19).

    .venv/bin/python scripts/bench_contention.py [--asks 12] [--bulk-processes 1] [--out FILE]

Prints the median and p90 seconds per answer and each setting's ratio to idle.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

# The tokenizer (transformers) and the model (ctranslate2.Generator) are third-party objects
# without type stubs here: they stay untyped.

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.bench import machine  # noqa: E402  (after the path)

PROMPT = (
    "Answer the question from the passages in a few words, or say I don't know.\n"
    "Passages: Bram Stoker wrote the novel Dracula, published in 1897 in London. "
    "The Eiffel Tower stands on the Champ de Mars in Paris.\nQuestion: Who wrote the novel Dracula?\nAnswer:"
)


def model_dir() -> Path:
    models = Path(os.environ.get("LLM_MODELS_DIR", ROOT / "var" / "models"))
    found = sorted(models.glob("qwen2.5-coder-0.5b-instruct-q4_k_m.ct2-int8-*"))
    if not found:
        sys.exit(f"No CTranslate2 copy of the 0.5B model under {models}: run scripts/test.sh or scripts/run.sh once.")
    return found[0]


def load(threads: int) -> tuple[Any, Any]:
    import ctranslate2
    from transformers import AutoTokenizer

    folder = model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), fix_mistral_regex=False)
    return tokenizer, ctranslate2.Generator(str(folder), device="cpu", compute_type="int8", intra_threads=threads)


def generate(tokenizer: Any, model: Any, max_tokens: int = 32) -> None:
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
    )
    tokens = tokenizer.convert_ids_to_tokens(tokenizer.encode(chat))
    model.generate_batch([tokens], max_length=max_tokens, sampling_topk=1, include_prompt_in_result=False)


def bulk(nice: int, threads: int, ready: Event, stop: Event) -> None:
    os.nice(nice)
    tokenizer, model = load(threads=threads)
    generate(tokenizer, model, 4)
    ready.set()
    while not stop.is_set():
        generate(tokenizer, model, 64)


def timed(tokenizer: Any, model: Any, asks: int) -> list[float]:
    out = []
    for _ in range(asks):
        started = time.perf_counter()
        generate(tokenizer, model)
        out.append(time.perf_counter() - started)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--asks", type=int, default=12)
    parser.add_argument("--bulk-processes", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    cores = machine.cores()
    tokenizer, model = load(threads=cores)
    generate(tokenizer, model, 4)  # warm
    settings: dict[str, list[float]] = {"idle": timed(tokenizer, model, args.asks)}
    ctx = mp.get_context("spawn")
    for name, nice in (("bulk", 0), ("bulk-nice10", 10), ("bulk-nice19", 19)):
        stop = ctx.Event()
        readies = [ctx.Event() for _ in range(args.bulk_processes)]
        share = max(1, cores // args.bulk_processes)
        workers = [ctx.Process(target=bulk, args=(nice, share, r, stop), daemon=True) for r in readies]
        for w in workers:
            w.start()
        for r in readies:
            r.wait(120)
        time.sleep(1.0)
        settings[name] = timed(tokenizer, model, args.asks)
        stop.set()
        for w in workers:
            w.join(60)
    idle = statistics.median(settings["idle"])
    rows = {
        name: {
            "median_s": round(statistics.median(v), 3),
            "p90_s": round(sorted(v)[int(0.9 * (len(v) - 1))], 3),
            "ratio_to_idle": round(statistics.median(v) / idle, 2),
        }
        for name, v in settings.items()
    }
    print(f"{machine.describe()}; {args.asks} answers per setting; {args.bulk_processes} bulk process(es)")
    print("| setting | median s | p90 s | x idle |\n| --- | ---: | ---: | ---: |")
    for name, row in rows.items():
        print(f"| {name} | {row['median_s']} | {row['p90_s']} | {row['ratio_to_idle']} |")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "cores": cores,
                    "machine": machine.as_dict(),
                    "asks": args.asks,
                    "bulk_processes": args.bulk_processes,
                    "settings": rows,
                    "raw": settings,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
