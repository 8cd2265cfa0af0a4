"""The local-model command line: ``python -m core.engine.backends.generation.models_cli``.

Kept apart from gguf_files (assembling needs no machine-learning stack) and
local_transformers (converting does), so neither imports the other. It also prepares the
packaged extra embedders of CrEst's ensemble (core.engine.backends.embedder_files).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from core.engine.backends import embedder_files
from core.engine.backends.embedder_files import EMBEDDERS
from core.engine.backends.generation.gguf_files import MODELS, ModelAssemblyError, assemble
from core.engine.backends.generation.local_ctranslate2 import CTranslate2Generator
from core.engine.backends.generation.local_transformers import TransformersGenerator


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m core.engine.backends.generation.models_cli",
        description="Assemble and verify a known GGUF model or packaged embedder, or print facts about one.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_assemble = sub.add_parser("assemble", help="join and verify the model; print the file's path")
    p_assemble.add_argument("key", choices=sorted(MODELS))
    p_assemble.add_argument("dest_dir")
    p_prepare = sub.add_parser(
        "prepare",
        help="a GGUF model: assemble and verify it, then dequantise it once with transformers into the "
        "cache folder beside it (needs transformers, gguf, accelerate); an embedder: assemble, verify "
        "and unpack it into <dest_dir>/<key>-<sha8>/; print the folder",
    )
    p_prepare.add_argument("key", choices=sorted([*MODELS, *EMBEDDERS]))
    p_prepare.add_argument("dest_dir")
    p_prepare.add_argument(
        "--runtime",
        choices=("transformers", "ctranslate2"),
        default="transformers",
        help="a GGUF model: ctranslate2 also converts the dequantised copy into CTranslate2's int8 folder "
        "(verified against its manifest; rebuilt when missing or wrong) and prints that folder",
    )
    p_req = sub.add_parser("requirements", help="print the requirements file that pins the model's packages")
    p_req.add_argument("key", choices=sorted([*MODELS, *EMBEDDERS]))
    sub.add_parser("list", help="list the known models and embedders")
    args = parser.parse_args(argv)
    if args.command == "assemble":
        try:
            print(assemble(args.key, args.dest_dir))
        except ModelAssemblyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    elif args.command == "prepare" and args.key in EMBEDDERS:
        spec = EMBEDDERS[args.key]
        already = embedder_files.is_prepared(spec, embedder_files.prepared_dir(spec, args.dest_dir))
        started = time.perf_counter()
        try:
            print(embedder_files.prepare(spec, args.dest_dir))
        except ModelAssemblyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        done = (
            "already prepared"
            if already
            else f"assembled, verified and unpacked in {time.perf_counter() - started:.1f} s"
        )
        print(f"{args.key}: {done}", file=sys.stderr)
    elif args.command == "prepare":
        generator: TransformersGenerator | CTranslate2Generator = (
            CTranslate2Generator(args.key, models_dir=args.dest_dir)
            if args.runtime == "ctranslate2"
            else TransformersGenerator(args.key, models_dir=args.dest_dir)
        )
        try:
            print(generator.prepare())
        except ModelAssemblyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        info = generator.load_info
        done = f"converted in {info['convert_seconds']:.0f} s" if "convert_seconds" in info else "already converted"
        if "rebuilt" in info:
            done += f" (the cached copy was rebuilt: {info['rebuilt']})"
        print(f"{args.key}: {done}", file=sys.stderr)
    elif args.command == "requirements":
        print(MODELS[args.key].requirements if args.key in MODELS else EMBEDDERS[args.key].archive.requirements)
    else:
        for known in [*MODELS.values(), *(e.archive for e in EMBEDDERS.values())]:
            print(f"{known.key}\t{known.size}\t{known.sha256}\t{known.requirements}\t{known.upstream}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
