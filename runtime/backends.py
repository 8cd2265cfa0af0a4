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
from core.engine.backends.generation.base import GENERATORS, Generator, GeneratorSettings
from core.engine.backends.nli import NLI, NLI_BACKENDS
from core.engine.registry import BackendNotConfigured
from core.engine.types import Embedder

__all__ = ["BackendNotConfigured", "configured_embedder", "configured_generator", "configured_nli"]


def configured_embedder() -> Embedder:
    """The embedder of EMBEDDING_MODEL, checked against the database's EMBEDDING_DIMENSION."""
    embedder = get_embedder(settings.EMBEDDING_MODEL or None)
    if embedder.dimension != settings.EMBEDDING_DIMENSION:
        raise RuntimeError(
            f"EMBEDDING_MODEL produces {embedder.dimension}-dimensional vectors but the database stores "
            f"{settings.EMBEDDING_DIMENSION}; set EMBEDDING_DIMENSION and migrate a fresh database"
        )
    return embedder


@functools.lru_cache(maxsize=4)
def _generator(backend: str, config: GeneratorSettings) -> Generator:
    try:
        factory = GENERATORS.get(backend)
    except KeyError as exc:
        raise BackendNotConfigured(f"unknown GENERATOR_BACKEND {backend!r}: {exc.args[0]}") from None
    return factory(config)


def configured_generator() -> Generator:
    """The generator of GENERATOR_BACKEND, built once per process from the LLM_* settings."""
    return _generator(
        settings.GENERATOR_BACKEND,
        GeneratorSettings(
            model=settings.LLM_MODEL,
            base_url=settings.LLM_BASE_URL,
            api_key=settings.LLM_API_KEY,
            timeout=settings.LLM_TIMEOUT_SECONDS,
            retries=settings.LLM_MAX_RETRIES,
            concurrency=settings.LLM_CONCURRENCY,
            max_new_tokens=settings.LLM_MAX_NEW_TOKENS,
            models_dir=str(settings.LLM_MODELS_DIR),
            dtype=settings.LLM_DTYPE,
            compute_type=settings.LLM_COMPUTE_TYPE,
            batch_size=settings.LLM_BATCH_SIZE,
            grounded=settings.ANSWER_GROUNDING,
        ),
    )


@functools.lru_cache(maxsize=4)
def _nli(backend: str, model: str, embedder_name: str) -> NLI:
    try:
        factory = NLI_BACKENDS.get(backend)
    except KeyError as exc:
        raise BackendNotConfigured(f"unknown NLI_BACKEND {backend!r}: {exc.args[0]}") from None
    return factory(model, configured_embedder())


def configured_nli() -> NLI:
    """The NLI of NLI_BACKEND (cached per backend, model and embedder)."""
    return _nli(settings.NLI_BACKEND, settings.NLI_MODEL, configured_embedder().name)
