"""The configured embedder, loaded once per process (web for queries, worker for ingestion)."""

from __future__ import annotations

from django.conf import settings

from core.engine.backends.embeddings import get_embedder
from core.engine.types import Embedder


def configured_embedder() -> Embedder:
    embedder = get_embedder(settings.EMBEDDING_MODEL or None)
    if embedder.dimension != settings.EMBEDDING_DIMENSION:
        raise RuntimeError(
            f"EMBEDDING_MODEL produces {embedder.dimension}-dimensional vectors but the database stores "
            f"{settings.EMBEDDING_DIMENSION}; set EMBEDDING_DIMENSION and migrate a fresh database"
        )
    return embedder
