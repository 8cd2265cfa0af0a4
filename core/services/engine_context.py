"""Build the engine's context (core.engine.strategies.EngineContext) from Django settings and the database.

Model backends (generator, NLI, embedder) are expensive to load, so they are built once per
process and cached by their settings. The source list is read fresh for every question or
batch, so a finished estimation run changes the next answer's weights at once.

Two reliability numbers, on purpose:
- Source.reliability is the estimated *accuracy* w_i in [0, 1] (the Beta-smoothed share of a
  source's non-IDK answers that agreed with the estimated truth). It is what users see.
- The *voting weight* v_i = N * w_i - 1 (RA-RAG eq. 4, floored at a small positive value) is
  what WMV and kappa-RRSS use. It is recomputed here from w_i with N = the number of sources
  in the context, so weights stay on one scale even when runs covered different sources.
  A source never estimated gets the prior mean accuracy (0.5) and so a neutral weight.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from django.conf import settings

from core.engine.backends.generation.base import Generator
from core.engine.backends.nli import NLI
from core.engine.strategies.base import EngineContext, EngineParams
from core.engine.types import Embedder, SourceInfo

PRIOR_ACCURACY = 0.5  # mean of the Beta(1, 1) prior that IWMV smooths with
MIN_WEIGHT = 1e-3  # same floor as core.engine.reliability.iwmv.iwmv


class BackendNotConfigured(RuntimeError):
    """A backend was selected in settings without what it needs (URL, model name)."""


def voting_weight(accuracy: float | None, n_sources: int) -> float:
    """v_i from w_i (RA-RAG's rescaling), with the prior mean for a never-estimated source."""
    w = PRIOR_ACCURACY if accuracy is None else float(accuracy)
    return max(n_sources * w - 1.0, MIN_WEIGHT)


@functools.lru_cache(maxsize=4)
def _generator(
    backend: str, base_url: str, model: str, api_key: str, timeout: float, retries: int, concurrency: int
) -> Generator:
    if backend == "extractive":
        from core.engine.backends.generation.extractive import ExtractiveReader

        return ExtractiveReader()
    if backend == "openai":
        if not base_url or not model:
            raise BackendNotConfigured("GENERATOR_BACKEND=openai needs LLM_BASE_URL and LLM_MODEL")
        from core.engine.backends.generation.openai_chat import OpenAIChatGenerator

        return OpenAIChatGenerator(
            base_url, model, api_key, timeout=timeout, max_retries=retries, concurrency=concurrency
        )
    if backend == "transformers":
        if not model:
            raise BackendNotConfigured("GENERATOR_BACKEND=transformers needs LLM_MODEL (a model name or path)")
        from core.engine.backends.generation.local_transformers import TransformersGenerator

        return TransformersGenerator(model)
    raise BackendNotConfigured(f"unknown GENERATOR_BACKEND {backend!r}")


def configured_generator() -> Generator:
    return _generator(
        settings.GENERATOR_BACKEND,
        settings.LLM_BASE_URL,
        settings.LLM_MODEL,
        settings.LLM_API_KEY,
        settings.LLM_TIMEOUT_SECONDS,
        settings.LLM_MAX_RETRIES,
        settings.LLM_CONCURRENCY,
    )


@functools.lru_cache(maxsize=4)
def _nli(backend: str, model: str, embedder_name: str) -> NLI:
    if backend == "cross-encoder":
        if not model:
            raise BackendNotConfigured("NLI_BACKEND=cross-encoder needs NLI_MODEL (a model name or path)")
        from core.engine.backends.nli import CrossEncoderNLI

        return CrossEncoderNLI(model)
    from core.engine.backends.nli import EmbeddingLexicalNLI
    from sources.embedding import configured_embedder

    return EmbeddingLexicalNLI(configured_embedder())


def configured_nli() -> NLI:
    from sources.embedding import configured_embedder

    return _nli(settings.NLI_BACKEND, settings.NLI_MODEL, configured_embedder().name)


def configured_params(**overrides: Any) -> EngineParams:
    base = EngineParams(kappa=settings.RA_RAG_KAPPA, k=settings.RETRIEVAL_K, tau=settings.ALIGN_TAU)
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


def source_infos(source_ids: list[int] | None = None) -> tuple[list[SourceInfo], dict[int, float | None]]:
    """Active sources that hold chunks (a source with nothing to retrieve cannot answer),
    as SourceInfo with their voting weight; plus each source's displayed accuracy."""
    from sources.models import Source

    rows = Source.objects.filter(active=True, chunk_count__gt=0)
    if source_ids is not None:
        rows = Source.objects.filter(pk__in=source_ids)
    rows = rows.order_by("id").values_list("id", "name", "reliability", "reliability_answers")
    listed = list(rows)
    n = len(listed)
    infos = [
        SourceInfo(id=i, name=name, reliability=voting_weight(rel, n), answers_count=answers)
        for i, name, rel, answers in listed
    ]
    return infos, {i: rel for i, _, rel, _ in listed}


def build_context(*, source_ids: list[int] | None = None, **param_overrides: Any) -> EngineContext:
    """An EngineContext over the database: PgRetriever, configured backends, current sources."""
    from sources.embedding import configured_embedder
    from sources.retrieval import PgRetriever

    embedder: Embedder = configured_embedder()
    sources, _ = source_infos(source_ids)
    return EngineContext(
        retriever=PgRetriever(),
        embedder=embedder,
        generator=configured_generator(),
        nli=configured_nli(),
        sources=sources,
        params=configured_params(**param_overrides),
    )
