"""An on-disk cache of embeddings, keyed by model name and a hash of the text.

Every seed and method of a benchmark run embeds the same document and question texts;
on two CPU cores that is most of a run's time, so vectors are kept in one SQLite file per
cache folder and only missing texts reach the model (in batches).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from core.engine.types import Embedder


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class CachedEmbedder:
    """Embedder protocol in front of another embedder, backed by ``<cache_dir>/embeddings.sqlite``."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(cache_dir / "embeddings.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self.hits = 0
        self.misses = 0
        self._memory: dict[str, npt.NDArray[np.float32]] = {}  # this process's lookups

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        keys = [text_key(self.name, t) for t in texts]
        found = {k: self._memory[k] for k in keys if k in self._memory}
        unique = [k for k in dict.fromkeys(keys) if k not in found]
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        self.hits += len(keys) - sum(1 for k in keys if k in missing)
        self.misses += len(missing)
        if missing:
            vectors = self.inner.encode(list(missing.values()), batch_size=batch_size)
            rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(missing, vectors, strict=True)]
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
            self._db.commit()
            for k, v in zip(missing, vectors, strict=True):
                found[k] = np.asarray(v, dtype=np.float32)
        self._memory.update(found)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)


def cached_default_embedder(cache_dir: Path, model: str | None = None) -> CachedEmbedder:
    from core.engine.backends.embeddings import get_embedder

    return CachedEmbedder(get_embedder(model), cache_dir)
