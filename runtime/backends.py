"""The configured model backends (embedder, generator, NLI), built from settings once per
process and cached by their settings: loading a model is expensive, so the web process and
every worker keep one of each (the web process for queries and capabilities, the workers for
ingestion, estimation and answers).

A neutral module below both apps: the sources app (ingestion, claim extraction, pgvector
retrieval) and core's services (engine_context.build_context, estimation) take their backends
from here, so neither app imports the other's services for them.
"""

from __future__ import annotations

import functools

from django.conf import settings

from core.engine.backends.embeddings import get_embedder
from core.engine.backends.generation import (
    CTranslate2Generator,
    ExtractiveReader,
    Generator,
    GroundedGenerator,
    OpenAIChatGenerator,
    TransformersGenerator,
)
from core.engine.backends.nli import NLI, CrossEncoderNLI, EmbeddingLexicalNLI
from core.engine.types import Embedder


def configured_embedder() -> Embedder:
    """The embedder of EMBEDDING_MODEL, checked against the database's EMBEDDING_DIMENSION."""
    embedder = get_embedder(settings.EMBEDDING_MODEL or None)
    if embedder.dimension != settings.EMBEDDING_DIMENSION:
        raise RuntimeError(
            f"EMBEDDING_MODEL produces {embedder.dimension}-dimensional vectors but the database stores "
            f"{settings.EMBEDDING_DIMENSION}; set EMBEDDING_DIMENSION and migrate a fresh database"
        )
    return embedder


class BackendNotConfigured(RuntimeError):
    """A backend was selected in settings without what it needs (URL, model name)."""


@functools.lru_cache(maxsize=4)
def _generator(
    backend: str,
    base_url: str,
    model: str,
    api_key: str,
    timeout: float,
    retries: int,
    concurrency: int,
    max_new_tokens: int = 32,
    models_dir: str = "",
    dtype: str = "auto",
    compute_type: str = "auto",
    batch_size: int = 0,
    grounded: bool = False,
) -> Generator:
    local = _local_generator(backend, model, max_new_tokens, models_dir, dtype, compute_type, batch_size)
    if local is not None:
        # A small local model's non-answers are replaced by the reader's span (grounded.py).
        return GroundedGenerator(local) if grounded else local
    if backend == "extractive":
        return ExtractiveReader()
    if backend == "openai":
        if not base_url or not model:
            raise BackendNotConfigured("GENERATOR_BACKEND=openai needs LLM_BASE_URL and LLM_MODEL")
        return OpenAIChatGenerator(
            base_url,
            model,
            api_key,
            timeout=timeout,
            max_retries=retries,
            concurrency=concurrency,
            max_tokens=max_new_tokens,
        )
    raise BackendNotConfigured(f"unknown GENERATOR_BACKEND {backend!r}")


def _local_generator(
    backend: str, model: str, max_new_tokens: int, models_dir: str, dtype: str, compute_type: str, batch_size: int
) -> Generator | None:
    """The local model runtimes (None for another backend)."""
    if backend == "transformers":
        if not model:
            raise BackendNotConfigured(
                "GENERATOR_BACKEND=transformers needs LLM_MODEL (a model name or folder, a .gguf file or a known model key)"
            )
        # Weights load on the first generation (in the worker), not here: building the
        # generator is cheap, so the web process can ask it for its capabilities.
        return TransformersGenerator(model, max_new_tokens=max_new_tokens, models_dir=models_dir or None, dtype=dtype)
    if backend == "ctranslate2":
        if not model:
            raise BackendNotConfigured(
                "GENERATOR_BACKEND=ctranslate2 needs LLM_MODEL (a known model key, a .gguf file or a model folder)"
            )
        return CTranslate2Generator(
            model,
            max_new_tokens,
            models_dir=models_dir or None,
            compute_type=compute_type,
            batch_size=batch_size,
        )
    return None


def configured_generator() -> Generator:
    return _generator(
        settings.GENERATOR_BACKEND,
        settings.LLM_BASE_URL,
        settings.LLM_MODEL,
        settings.LLM_API_KEY,
        settings.LLM_TIMEOUT_SECONDS,
        settings.LLM_MAX_RETRIES,
        settings.LLM_CONCURRENCY,
        settings.LLM_MAX_NEW_TOKENS,
        str(settings.LLM_MODELS_DIR),
        settings.LLM_DTYPE,
        settings.LLM_COMPUTE_TYPE,
        settings.LLM_BATCH_SIZE,
        settings.ANSWER_GROUNDING,
    )


@functools.lru_cache(maxsize=4)
def _nli(backend: str, model: str, embedder_name: str) -> NLI:
    if backend == "cross-encoder":
        if not model:
            raise BackendNotConfigured("NLI_BACKEND=cross-encoder needs NLI_MODEL (a model name or path)")
        return CrossEncoderNLI(model)
    return EmbeddingLexicalNLI(configured_embedder())


def configured_nli() -> NLI:
    return _nli(settings.NLI_BACKEND, settings.NLI_MODEL, configured_embedder().name)
