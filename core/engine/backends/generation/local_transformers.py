"""A local causal language model through transformers (GPU when available), greedy decoding."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest
from core.engine.backends.generation.prompts import SYSTEM, answer_prompt, clean_completion


class TransformersGenerator:
    def __init__(
        self,
        model_name_or_path: str,
        device: str | None = None,
        max_new_tokens: int = 24,
        batch_size: int = 8,
    ) -> None:
        self.model_name_or_path = model_name_or_path
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.name = f"transformers:{model_name_or_path}"
        self.capabilities = frozenset({Capability.FREE_TEXT})
        self._device = device
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer

                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                tokenizer = AutoTokenizer.from_pretrained(self.model_name_or_path)
                # Left padding so every prompt in a batch ends where generation starts.
                tokenizer.padding_side = "left"
                if tokenizer.pad_token is None:
                    tokenizer.pad_token = tokenizer.eos_token
                dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
                model = AutoModelForCausalLM.from_pretrained(self.model_name_or_path, torch_dtype=dtype)
                model = model.to(device)  # type: ignore[arg-type]
                model.eval()
                self._loaded = (tokenizer, model)
            return self._loaded

    def _render(self, tokenizer: Any, request: GenerationRequest) -> str:
        prompt = request.prompt or answer_prompt(request.question, request.passages)
        if getattr(tokenizer, "chat_template", None):
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": prompt},
            ]
            try:
                rendered: str = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
                return rendered
            except Exception:  # some templates reject a system turn
                rendered = tokenizer.apply_chat_template(messages[1:], tokenize=False, add_generation_prompt=True)
                return rendered
        return prompt

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
            with torch.no_grad():
                generated = model.generate(
                    **encoded,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                )
            prompt_len = encoded["input_ids"].shape[1]
            for row, request, mask in zip(generated, batch, encoded["attention_mask"], strict=False):
                new_tokens = row[prompt_len:]
                if tokenizer.eos_token_id is not None:
                    stop = (new_tokens == tokenizer.eos_token_id).nonzero()
                    if len(stop):
                        new_tokens = new_tokens[: int(stop[0])]
                text = tokenizer.decode(new_tokens, skip_special_tokens=True)
                out.append(
                    Generation(
                        text=clean_completion(text) if request.prompt is None else text.strip(),
                        backend=self.name,
                        prompt_tokens=int(mask.sum()),
                        completion_tokens=int(len(new_tokens)),
                    )
                )
        return out
