"""A local causal language model through CTranslate2: int8 weights and a cached prompt head.

The product's fast answering runtime on a CPU (docs/models.md has the side-by-side runs).
``model_name_or_path`` is what TransformersGenerator takes (a known model key, a ``.gguf``
file or a local transformers folder): that generator dequantises a GGUF once into its
float32 cache, and this one converts the result once more, with CTranslate2's own converter,
into ``<stem>.ct2-<compute type>-<sha[:16]>/`` beside the GGUF (keyed by the GGUF's sha256,
like the float32 cache; a plain folder gets ``<folder>.ct2-<compute type>/`` beside it).

The converted folder is verified before every load: a manifest, written last, records each
file's size and sha256, and a folder whose manifest is missing or whose files do not match
it (a crash in mid-write, a truncated or altered ``model.bin``) is deleted and converted
again. Nothing else is trusted.

Two things make it fast here, both measured (docs/models.md):

- int8 matrix products (CTranslate2's ``int8`` compute type) instead of float32;
- the shared opening of the product's answer prompt (system turn, instruction, five
  few-shot examples: about 540 of a prompt's 650 tokens) is given as CTranslate2's
  ``static_prompt`` with ``cache_static_prompt``: the model state after it is computed once
  per process and every later prompt starts from it (prompts.PROMPT_HEADS lists the known
  openings; a prompt with none is run whole).

A strategy hands every prompt of a round to :meth:`generate` at once; the runtime groups
them by prompt head and token budget and sorts each group by length, then runs micro-batches
of ``batch_size``. On a 2-core CPU one prompt at a time was the fastest (padding and one
long answer hold up a whole batch), so the default there is 1; a GPU gets 16.

White-box access (CrEst white-box's attention hooks, token scores) is not something
CTranslate2 offers: :meth:`white_box` and :meth:`score` go to the TransformersGenerator of
the same model, which loads its float32 weights only when first asked.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.engine.backends.generation.base import (
    GENERATORS,
    BackendNotConfigured,
    Capability,
    CausalLM,
    Generation,
    GenerationRequest,
    Generator,
    GeneratorSettings,
    Tokenizer,
    token_budget,
)
from core.engine.backends.generation.gguf_files import file_sha256, sha256_of
from core.engine.backends.generation.grounded import GroundedGenerator
from core.engine.backends.generation.local_transformers import ModelLoadError, TransformersGenerator
from core.engine.backends.generation.prompts import finish_completion, prompt_head, render_chat, user_prompt
from core.engine.backends.staging import staged_folder

MANIFEST = "ct2-manifest.json"  # written last: a folder without it is incomplete
# What the converted folder carries besides the weights, so it loads on its own.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
)
COMPUTE_TYPES = ("auto", "int8", "int8_float32", "float32", "int8_float16", "float16", "bfloat16")


def converted_ct2_dir(source: Path, compute_type: str, sha256: str | None) -> Path:
    """Where the CTranslate2 copy of ``source`` (a GGUF file or a model folder) is kept."""
    if sha256 is not None:
        return source.parent / f"{source.stem}.ct2-{compute_type}-{sha256[:16]}"
    return source.parent / f"{source.name}.ct2-{compute_type}"


def _files_of(folder: Path) -> dict[str, dict[str, int | str]]:
    return {
        path.name: {"size": path.stat().st_size, "sha256": sha256_of(path)}
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name != MANIFEST
    }


def verify_converted(folder: Path) -> str | None:
    """None when ``folder`` is a complete conversion whose every file matches its manifest,
    else what is wrong (in words)."""
    manifest = folder / MANIFEST
    try:
        recorded = json.loads(manifest.read_text())["files"]
    except FileNotFoundError:
        return "no manifest (an incomplete conversion)"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"unreadable manifest ({exc})"
    if "model.bin" not in recorded:
        return "the manifest lists no model.bin"
    for name, expected in recorded.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != expected.get("size"):
            return f"{name} has {path.stat().st_size} bytes, the manifest says {expected.get('size')}"
        if sha256_of(path) != expected.get("sha256"):
            return f"{name} does not match its sha256"
    return None


def convert_to_ct2(model_dir: Path, dest: Path, compute_type: str) -> None:
    """Convert the transformers model in ``model_dir`` with CTranslate2's converter, weights
    quantised to ``compute_type``, into ``dest`` with its tokenizer files and a manifest.
    Written to a temporary folder beside ``dest`` and renamed into place: a crash or a second
    process never leaves a half-written folder under the final name."""
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    with staged_folder(dest, lambda path: verify_converted(path) is None) as stage:
        tmp = stage.folder
        copy = [name for name in TOKENIZER_FILES if (model_dir / name).is_file()]
        TransformersConverter(str(model_dir), copy_files=copy).convert(str(tmp), quantization=compute_type, force=True)
        manifest = {
            "from": model_dir.name,
            "compute_type": compute_type,
            "ctranslate2": ctranslate2.__version__,
            "files": _files_of(tmp),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def _default_threads() -> int:
    """The threads this process lets torch use (the worker sets it per pool process:
    WORKER_TORCH_THREADS), so both runtimes share the cores the same way."""
    import torch

    return max(1, int(torch.get_num_threads()))


class CTranslate2Generator:
    def __init__(
        self,
        model_name_or_path: str,
        max_new_tokens: int = 32,
        *,
        models_dir: str | Path | None = None,
        compute_type: str = "auto",
        device: str | None = None,
        threads: int = 0,
        batch_size: int = 0,
        cache_prompt_head: bool = True,
    ) -> None:
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute type must be one of {', '.join(COMPUTE_TYPES)}, not {compute_type!r}")
        self.max_new_tokens = max_new_tokens
        self.compute_type = compute_type
        self.threads = threads
        self.batch_size = batch_size
        self.cache_prompt_head = cache_prompt_head
        # The same model through transformers: the float32 source of the conversion, and the
        # white-box half (attention, token scores), loaded only when a strategy asks for it.
        self.transformers = TransformersGenerator(
            model_name_or_path, max_new_tokens=max_new_tokens, models_dir=models_dir
        )
        self.model_key = self.transformers.model_key
        self.name = f"ctranslate2:{self.model_key or model_name_or_path}"
        self.capabilities = frozenset({Capability.FREE_TEXT, Capability.TOKEN_SCORES})
        # How the last preparation and load went: source ("ct2-converted" or "ct2-cache"),
        # the folder, why a cached folder was rebuilt, seconds.
        self.load_info: dict[str, Any] = {}
        self._device = device
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, CausalLM] | None = None
        self._head_tokens: dict[str, list[str]] = {}

    # --- preparation ---------------------------------------------------------------------

    def _resolved_compute_type(self, device: str) -> str:
        if self.compute_type != "auto":
            return self.compute_type
        return "int8_float16" if device == "cuda" else "int8"

    def _device_name(self) -> str:
        if self._device:
            return self._device
        import ctranslate2

        return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"

    def prepare(self) -> str:
        """Dequantise (transformers) and convert (CTranslate2) the model now if no verified
        copy exists, without loading it; returns the converted folder."""
        with self._lock:
            return str(self._converted(self._device_name()))

    def _converted(self, device: str) -> Path:
        compute_type = self._resolved_compute_type(device)
        model_dir = Path(self.transformers.prepare())
        if not model_dir.is_dir():
            raise ModelLoadError(f"{self.name}: CTranslate2 converts a local model folder, not {model_dir}")
        gguf = self.transformers.load_info.get("gguf")
        if gguf:
            dest = converted_ct2_dir(Path(gguf), compute_type, file_sha256(Path(gguf)))
        else:
            dest = converted_ct2_dir(model_dir, compute_type, None)
        self.load_info.update(folder=str(dest), compute_type=compute_type)
        self.load_info.pop("rebuilt", None)
        problem = verify_converted(dest) if dest.exists() else "missing"
        if problem is None:
            self.load_info["source"] = "ct2-cache"
            return dest
        if dest.exists():
            self.load_info["rebuilt"] = problem
        started = time.perf_counter()
        convert_to_ct2(model_dir, dest, compute_type)
        self.load_info.update(source="ct2-converted", convert_seconds=time.perf_counter() - started)
        return dest

    def _load(self) -> tuple[Tokenizer, CausalLM]:
        with self._lock:
            if self._loaded is None:
                import ctranslate2
                from transformers import AutoTokenizer

                started = time.perf_counter()
                device = self._device_name()
                folder = self._converted(device)
                threads = self.threads or _default_threads()
                model = ctranslate2.Generator(
                    str(folder),
                    device=device,
                    compute_type=self._resolved_compute_type(device),
                    intra_threads=threads if device == "cpu" else 0,
                )
                # CTranslate2's config.json beside the tokenizer names no model type, which
                # transformers (5.x) reads as "maybe a Mistral tokenizer" and warns of an
                # incorrect regex; Qwen's is not Mistral's (the fix would be wrong here), so
                # the fix is declined explicitly. The test suite checks that this copy
                # tokenizes exactly as the transformers runtime's does.
                tokenizer = AutoTokenizer.from_pretrained(str(folder), fix_mistral_regex=False)
                self._loaded = (tokenizer, model)
                self.load_info.update(device=device, threads=threads, seconds=time.perf_counter() - started)
            return self._loaded

    # --- generation ----------------------------------------------------------------------

    def _end_tokens(self, tokenizer: Tokenizer) -> list[str]:
        ends = [tokenizer.eos_token] if tokenizer.eos_token else []
        return ends or ["</s>"]

    def _split(self, tokenizer: Tokenizer, request: GenerationRequest) -> tuple[list[str], list[str], int]:
        """(cached head tokens, the rest of the prompt's tokens, the prompt's token count).
        The head is used only when its tokens are exactly the prompt's first tokens, so the
        model sees the very tokens it would see without the cache."""
        prompt = user_prompt(request.prompt, request.question, request.passages)
        rendered = render_chat(tokenizer, prompt)
        ids = tokenizer(rendered)["input_ids"]
        tokens: list[str] = tokenizer.convert_ids_to_tokens(ids)
        head = prompt_head(prompt) if self.cache_prompt_head else ""
        at = rendered.find(prompt) if head else -1
        if at >= 0:
            head_text = rendered[: at + len(head)]
            head_tokens = self._head_tokens.get(head_text)
            if head_tokens is None:
                head_tokens = tokenizer.convert_ids_to_tokens(tokenizer(head_text)["input_ids"])
                self._head_tokens[head_text] = head_tokens
            if len(head_tokens) < len(tokens) and tokens[: len(head_tokens)] == head_tokens:
                return head_tokens, tokens[len(head_tokens) :], len(tokens)
        return [], tokens, len(tokens)

    def _micro_batch(self, device: str) -> int:
        return self.batch_size or (16 if device == "cuda" else 1)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        tokenizer, model = self._load()
        end_tokens = self._end_tokens(tokenizer)
        split = [self._split(tokenizer, r) for r in requests]
        budgets = [token_budget(r, self.max_new_tokens) for r in requests]
        groups: dict[tuple[tuple[str, ...], int], list[int]] = {}
        for i, (head_tokens, _, _) in enumerate(split):
            groups.setdefault((tuple(head_tokens), budgets[i]), []).append(i)
        size = self._micro_batch(self.load_info.get("device", "cpu"))
        out: list[Generation | None] = [None] * len(requests)
        for (head, budget), members in groups.items():
            members.sort(key=lambda i: len(split[i][1]))
            for start in range(0, len(members), size):
                batch = members[start : start + size]
                options: dict[str, object] = {}
                if head:
                    options = {"static_prompt": list(head), "cache_static_prompt": True}
                results = model.generate_batch(
                    [split[i][1] for i in batch],
                    max_length=budget,
                    sampling_topk=1,
                    beam_size=1,
                    include_prompt_in_result=False,
                    end_token=end_tokens,
                    **options,
                )
                for i, result in zip(batch, results, strict=True):
                    new_ids = result.sequences_ids[0]
                    text = tokenizer.decode(new_ids, skip_special_tokens=True)
                    out[i] = Generation(
                        text=finish_completion(requests[i].prompt, text),
                        backend=self.name,
                        prompt_tokens=split[i][2],
                        completion_tokens=len(new_ids),
                    )
        return [g for g in out if g is not None]

    def render(self, request: GenerationRequest) -> str:
        """The exact text the model is given for ``request`` (chat template, system turn)."""
        tokenizer, _ = self._load()
        return render_chat(tokenizer, user_prompt(request.prompt, request.question, request.passages))

    # --- white-box, through transformers -------------------------------------------------

    def white_box(self) -> tuple[Tokenizer, CausalLM]:
        """The same model's float32 (tokenizer, model) through transformers, for strategies
        that hook attention (CrEst white-box); loaded on first use."""
        return self.transformers.white_box()

    def score(self, requests: Sequence[GenerationRequest], continuations: Sequence[str]) -> list[float]:
        """TokenScorer, through the transformers model (exact float32 log-probabilities)."""
        return self.transformers.score(requests, continuations)


@GENERATORS.register("ctranslate2")
def ctranslate2_generator(settings: GeneratorSettings) -> Generator:
    if not settings.model:
        raise BackendNotConfigured(
            "GENERATOR_BACKEND=ctranslate2 needs LLM_MODEL (a known model key, a .gguf file or a model folder)"
        )
    model = CTranslate2Generator(
        settings.model,
        settings.max_new_tokens,
        models_dir=settings.models_dir or None,
        compute_type=settings.compute_type,
        batch_size=settings.batch_size,
    )
    return GroundedGenerator(model) if settings.grounded else model
