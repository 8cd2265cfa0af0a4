"""A local causal language model through transformers (GPU when available), greedy decoding.

``model_name_or_path`` is one of:

- a transformers model folder or hub name (loaded as is);
- a ``.gguf`` file, e.g. ``/data/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf``;
- the key of a known model (core.engine.backends.generation.gguf_files.MODELS), e.g.
  ``qwen2.5-coder-0.5b-instruct-q4_k_m``: its GGUF is assembled from the installed
  packages and verified into ``models_dir`` first.

A GGUF is read by transformers (``from_pretrained(folder, gguf_file=name)``), which
dequantises every weight to a plain float32 model: no llama.cpp build is needed, and the
model stays white-box (attentions, logits, hooks). That conversion is slow (about a minute
for the 0.5B model here), so its result is saved once with ``save_pretrained`` into a folder
beside the GGUF, named after the GGUF's sha256 (``<stem>.hf-<sha[:16]>/``), and every later
load reads that folder (seconds). A changed GGUF has another hash, hence another folder.

White-box access: :meth:`TransformersGenerator.white_box` lends the loaded (tokenizer,
model) to strategies that hook attention (CrEst white-box), and :meth:`score` implements
the TokenScorer protocol (continuation log-probabilities), hence Capability.TOKEN_SCORES.
"""

from __future__ import annotations

import gc
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
from core.engine.backends.generation.grounded import GroundedGenerator
from core.engine.backends.generation.prompts import finish_completion, render_chat, user_prompt
from core.engine.backends.staging import staged_folder

# gguf_files is imported where it is used (it needs nothing of this module, and the command
# line that uses both lives in models_cli).

CONVERTED_MARKER = "converted-from-gguf.json"  # written last: a folder without it is incomplete


class ModelLoadError(RuntimeError):
    """The configured model cannot be found or loaded (a missing file, no models folder for a key)."""


def converted_dir(gguf: Path, sha256: str) -> Path:
    """Where the dequantised copy of ``gguf`` is cached: beside it, keyed by its hash."""
    return gguf.parent / f"{gguf.stem}.hf-{sha256[:16]}"


def _drop_quantization_marks(model: CausalLM) -> None:
    """A dequantised GGUF model is a plain dense model, but transformers still marks it as
    "quantized with gguf" and refuses to save it: remove the marks (as HfQuantizer's
    remove_quantization_config does) once no packed GGUF layer is left."""
    packed = [type(m).__name__ for m in model.modules() if "gguf" in type(m).__name__.lower()]
    if packed:
        raise ModelLoadError(f"the GGUF model kept packed layers ({packed[0]}); cannot cache it as a dense model")
    for attribute in ("hf_quantizer", "quantization_method"):
        if hasattr(model, attribute):
            delattr(model, attribute)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False


def convert_gguf(gguf: Path, dest: Path) -> None:
    """Dequantise ``gguf`` to float32 with transformers and save model and tokenizer in
    ``dest`` (written to a temporary folder beside it, then renamed: a crash or a second
    process never leaves a half-written cache)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"gguf_file": gguf.name, "dtype": torch.float32}
    try:  # transformers >= 5: ask for a dense model explicitly (no packed GGUF kernels)
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # older versions always dequantise
        pass
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), **kwargs)
    _drop_quantization_marks(model)
    try:
        with staged_folder(dest, lambda path: (path / CONVERTED_MARKER).is_file()) as stage:
            tokenizer.save_pretrained(stage.folder)
            model.save_pretrained(stage.folder)
            (stage.folder / CONVERTED_MARKER).write_text(json.dumps({"gguf": gguf.name, "dtype": "float32"}) + "\n")
    finally:
        del model
        gc.collect()


DTYPES = ("auto", "float32", "bfloat16")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags as Linux reports them (empty where they cannot be read)."""
    try:
        with cpuinfo.open() as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def cpu_has_amx_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has AMX tiles that multiply bfloat16 (Intel Sapphire Rapids and later;
    Linux reports it as the ``amx_bf16`` flag). False where the flags cannot be read."""
    return "amx_bf16" in cpu_flags(cpuinfo)
    return False


class TransformersGenerator:
    def __init__(
        self,
        model_name_or_path: str,
        device: str | None = None,
        max_new_tokens: int = 24,
        batch_size: int = 8,
        *,
        models_dir: str | Path | None = None,
        dtype: str = "auto",
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        self.dtype = dtype
        self.model_name_or_path = model_name_or_path
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.models_dir = Path(models_dir) if models_dir is not None else None
        self.model_key = self._model_key(model_name_or_path)
        # The recorded backend names the model: the key of a known model, else what was configured.
        self.name = f"transformers:{self.model_key or model_name_or_path}"
        self.capabilities = frozenset({Capability.FREE_TEXT, Capability.TOKEN_SCORES})
        # How the last load went: source ("gguf-converted", "gguf-cache" or "pretrained"), seconds.
        self.load_info: dict[str, Any] = {}
        self._device = device
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, CausalLM] | None = None

    @staticmethod
    def _model_key(model: str) -> str | None:
        """The known model's key when ``model`` is a key or the assembled file of one."""
        from core.engine.backends.generation.gguf_files import MODELS

        if model in MODELS:
            return model
        name = Path(model).name
        return next((key for key, spec in MODELS.items() if spec.filename == name), None)

    def _gguf_path(self) -> Path | None:
        """The GGUF file to load (assembling a known model first), or None for a plain model."""
        from core.engine.backends.generation.gguf_files import MODELS, assemble

        model = self.model_name_or_path
        if model in MODELS:
            if self.models_dir is None:
                raise ModelLoadError(f"model key {model!r} needs a models folder to assemble into")
            return assemble(model, self.models_dir)
        if model.lower().endswith(".gguf"):
            path = Path(model).expanduser()
            if not path.is_file():
                raise ModelLoadError(f"GGUF file not found: {path}")
            return path.resolve()
        return None

    def prepare(self) -> str:
        """Assemble and convert the model now, without loading it (a process that prepares
        the model for the workers, as the run and test scripts do); returns what
        ``from_pretrained`` will read."""
        with self._lock:
            return self._pretrained_source()

    def _pretrained_source(self) -> str:
        """What ``from_pretrained`` reads: the converted cache of a GGUF (converting it on the
        first load), or the configured model name or folder."""
        gguf = self._gguf_path()
        if gguf is None:
            self.load_info["source"] = "pretrained"
            return self.model_name_or_path
        from core.engine.backends.generation.gguf_files import file_sha256

        cache = converted_dir(gguf, file_sha256(gguf))
        self.load_info.update(gguf=str(gguf), cache=str(cache))
        if (cache / CONVERTED_MARKER).is_file():
            self.load_info["source"] = "gguf-cache"
        else:
            started = time.perf_counter()
            convert_gguf(gguf, cache)
            self.load_info.update(source="gguf-converted", convert_seconds=time.perf_counter() - started)
        return str(cache)

    def _load(self) -> tuple[Tokenizer, CausalLM]:
        with self._lock:
            if self._loaded is None:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer

                started = time.perf_counter()
                source = self._pretrained_source()
                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                tokenizer = AutoTokenizer.from_pretrained(source)
                # Left padding so every prompt in a batch ends where generation starts.
                tokenizer.padding_side = "left"
                if tokenizer.pad_token is None:
                    tokenizer.pad_token = tokenizer.eos_token
                # auto: bfloat16 on a GPU and on a CPU whose AMX units multiply it (measured
                # on an Intel Xeon with AMX: 3.1 times faster than float32 per prompt, the
                # same 20 of 20 greedy answers); float32 on other CPUs, which only emulate
                # bfloat16 (slower than float32 on an AVX-512 AMD EPYC). docs/models.md.
                if self.dtype == "auto":
                    fast_bf16 = device.startswith("cuda") or (device == "cpu" and cpu_has_amx_bf16())
                    dtype = torch.bfloat16 if fast_bf16 else torch.float32
                else:
                    dtype = getattr(torch, self.dtype)
                model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
                self.load_info["dtype"] = str(dtype).removeprefix("torch.")
                model = model.to(device)  # type: ignore[arg-type]  # transformers types .to() narrower than the device torch takes
                model.eval()
                self._loaded = (tokenizer, model)
                self.load_info["seconds"] = time.perf_counter() - started
            return self._loaded

    def white_box(self) -> tuple[Tokenizer, CausalLM]:
        """The loaded (tokenizer, model), loading them on first use: white-box access for
        strategies that read logits or hook attention (CrEst white-box). The model is
        shared by every caller in this process; do not modify it outside a context manager
        that restores it."""
        return self._load()

    def render(self, request: GenerationRequest) -> str:
        """The exact text the model is given for ``request`` (chat template, system turn)."""
        tokenizer, _ = self._load()
        return self._render(tokenizer, request)

    def _render(self, tokenizer: Tokenizer, request: GenerationRequest) -> str:
        return render_chat(tokenizer, user_prompt(request.prompt, request.question, request.passages))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        import torch

        tokenizer, model = self._load()
        out: list[Generation] = []
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            texts = [self._render(tokenizer, r) for r in batch]
            encoded = tokenizer(texts, return_tensors="pt", padding=True).to(model.device)
            budgets = [token_budget(r, self.max_new_tokens) for r in batch]
            with torch.no_grad():
                generated = model.generate(
                    **encoded,
                    max_new_tokens=max(budgets),
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                )
            prompt_len = encoded["input_ids"].shape[1]
            for row, request, mask, budget in zip(generated, batch, encoded["attention_mask"], budgets, strict=False):
                new_tokens = row[prompt_len:][:budget]  # the batch ran to its largest budget
                if tokenizer.eos_token_id is not None:
                    stop = (new_tokens == tokenizer.eos_token_id).nonzero()
                    if len(stop):
                        new_tokens = new_tokens[: int(stop[0])]
                text = tokenizer.decode(new_tokens, skip_special_tokens=True)
                out.append(
                    Generation(
                        text=finish_completion(request.prompt, text),
                        backend=self.name,
                        prompt_tokens=int(mask.sum()),
                        completion_tokens=int(len(new_tokens)),
                    )
                )
        return out

    def score(self, requests: Sequence[GenerationRequest], continuations: Sequence[str]) -> list[float]:
        """TokenScorer: the summed log-probability (natural log) of each continuation's tokens
        right after its rendered request, by teacher forcing. The prompt and
        the continuation are tokenised apart and concatenated, so the continuation's tokens
        are exactly its own (an empty continuation scores 0)."""
        if len(requests) != len(continuations):
            raise ValueError(f"{len(requests)} requests but {len(continuations)} continuations")
        import torch

        tokenizer, model = self._load()
        scores: list[float] = []
        for request, continuation in zip(requests, continuations, strict=True):
            prompt_ids = tokenizer(self._render(tokenizer, request), add_special_tokens=False)["input_ids"]
            cont_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"]
            if not prompt_ids:
                raise ValueError("cannot score a continuation of an empty prompt")
            if not cont_ids:
                scores.append(0.0)
                continue
            ids = torch.tensor([list(prompt_ids) + list(cont_ids)], device=model.device)
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0].float()
            log_probs = torch.log_softmax(logits[len(prompt_ids) - 1 : -1], dim=-1)
            targets = torch.tensor(cont_ids, device=model.device).unsqueeze(1)
            scores.append(float(log_probs.gather(1, targets).sum()))
        return scores


@GENERATORS.register("transformers")
def transformers_generator(settings: GeneratorSettings) -> Generator:
    if not settings.model:
        raise BackendNotConfigured(
            "GENERATOR_BACKEND=transformers needs LLM_MODEL (a model name or folder, a .gguf file or a known model key)"
        )
    # Weights load on the first generation (in the worker), not here: building the
    # generator is cheap, so the web process can ask it for its capabilities.
    model = TransformersGenerator(
        settings.model,
        max_new_tokens=settings.max_new_tokens,
        models_dir=settings.models_dir or None,
        dtype=settings.dtype,
    )
    return GroundedGenerator(model) if settings.grounded else model
