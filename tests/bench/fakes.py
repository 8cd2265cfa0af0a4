"""A deterministic, model-free embedder for tests: hashed bag of words, L2-normalised."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class HashingEmbedder:
    name = "hashing-test"
    dimension = 256

    def __init__(self) -> None:
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts_encoded += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)
