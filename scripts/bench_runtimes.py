"""The local model's runtimes side by side on the product's own answer prompts (not a test).

    .venv/bin/python scripts/bench_runtimes.py --prompts 16 --out var/bench/runtimes.json

Builds ``--prompts`` RAG prompts with the product's answer prompt (core.engine.backends.
generation.prompts) from PoisonedRAG's NQ questions (one or three of its passages each,
alternating, so prompt lengths vary as they do across sources), then runs every prompt
through each runtime in turn, in one process, greedy, at most 32 new tokens:

- ``transformers``: the float32 dequantised model, one prompt at a time (the white-box path);
- ``transformers-bf16``: the same in bfloat16 (AMX's matrix units run it where the CPU has them);
- ``ct2``: CTranslate2 int8, the whole prompt, one at a time;
- ``ct2-head``: CTranslate2 int8 with the answer prompt's head cached (the product's default);
- ``ct2-head-b4``, ``ct2-b4``: the same in micro-batches of four;
- ``llama-server`` (with ``--llama-server``): llama.cpp's OpenAI-compatible server from the
  xllamacpp wheel on loopback, through the product's openai backend (its prompt cache on).

Prints seconds per prompt (median, p90, mean) and how many answers equal the float32
transformers answers, and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.engine.backends.generation import GenerationRequest, Generator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bench import machine  # noqa: E402  (after the path)


def prompts(data: Path, n: int) -> list[GenerationRequest]:
    from core.engine.backends.generation import GenerationRequest

    items = list(json.loads((data / "poisonedrag" / "nq.json").read_text()).values())[:n]
    return [GenerationRequest(it["question"], it["adv_texts"][: 3 if i % 2 else 1]) for i, it in enumerate(items)]


def timed(generator: Generator, requests: list[GenerationRequest], batch: int) -> tuple[list[str], list[float]]:
    answers: list[str] = []
    seconds: list[float] = []
    for start in range(0, len(requests), batch):
        chunk = requests[start : start + batch]
        began = time.perf_counter()
        answers.extend(g.text for g in generator.generate(chunk))
        seconds.extend([(time.perf_counter() - began) / len(chunk)] * len(chunk))
    return answers, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--models-dir", type=Path, default=ROOT / "var" / "models")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--llama-server", action="store_true", help="also llama.cpp's server (xllamacpp)")
    parser.add_argument("--out")
    args = parser.parse_args()

    import torch

    from core.engine.backends.generation import CTranslate2Generator, OpenAIChatGenerator, TransformersGenerator
    from core.engine.backends.generation.gguf_files import MODELS, assemble

    torch.set_num_threads(machine.cores())
    requests = prompts(args.data, args.prompts)
    runs: dict[str, dict[str, Any]] = {}

    def record(name: str, answers: list[str], seconds: list[float]) -> None:
        ordered = sorted(seconds)
        runs[name] = {
            "answers": answers,
            "median_s": statistics.median(seconds),
            "p90_s": ordered[max(0, round(0.9 * len(ordered)) - 1)],
            "mean_s": statistics.fmean(seconds),
        }
        print(f"{name:14s} median {runs[name]['median_s']:.2f} s  p90 {runs[name]['p90_s']:.2f} s", flush=True)

    hf = TransformersGenerator(args.model, max_new_tokens=32, models_dir=args.models_dir, batch_size=1)
    hf.white_box()
    record("transformers", *timed(hf, requests, 1))
    del hf
    # bfloat16 weights: on a CPU with AMX (Intel Sapphire Rapids and later) its matrix units
    # run bf16; elsewhere torch emulates it.
    bf16 = TransformersGenerator(
        args.model, max_new_tokens=32, models_dir=args.models_dir, batch_size=1, dtype="bfloat16"
    )
    bf16.white_box()
    record("transformers-bf16", *timed(bf16, requests, 1))
    del bf16
    ct2 = CTranslate2Generator(args.model, 32, models_dir=args.models_dir)
    ct2.prepare()
    for name, head, batch in [("ct2", False, 1), ("ct2-head", True, 1), ("ct2-head-b4", True, 4), ("ct2-b4", False, 4)]:
        variant = CTranslate2Generator(
            args.model, 32, models_dir=args.models_dir, cache_prompt_head=head, batch_size=batch
        )
        record(name, *timed(variant, requests, len(requests)))
    if args.llama_server:
        port = 8797
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.engine.llama_server",
                str(assemble(MODELS[args.model], args.models_dir)),
                str(port),
                "m",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                    break
                except OSError:
                    time.sleep(0.5)
            client = OpenAIChatGenerator(f"http://127.0.0.1:{port}/v1", "m", timeout=600, concurrency=1)
            record("llama-server", *timed(client, requests, 1))
        finally:
            server.terminate()
            server.wait()
    reference = runs["transformers"]["answers"]
    for name, run in runs.items():
        run["same_as_transformers"] = sum(a == b for a, b in zip(run["answers"], reference, strict=True))
        print(f"{name:14s} {run['same_as_transformers']}/{len(reference)} answers as transformers float32")
    result = {
        "machine": machine.as_dict(),
        "model": args.model,
        "prompts": len(requests),
        "runs": runs,
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
