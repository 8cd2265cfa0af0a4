"""Test doubles: a deterministic bag-of-words embedder and a scripted generator."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest


class HashEmbedder:
    """Hashes words into 64 buckets: texts sharing words get similar vectors."""

    name = "hash-64"
    dimension = 64

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension
                out[row, bucket] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


class ScriptedGenerator:
    """Answers with the first passage's first word after "answer:", else IDK."""

    name = "scripted"
    capabilities: frozenset[Capability] = frozenset({Capability.FREE_TEXT})

    def __init__(self) -> None:
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.requests.extend(requests)
        out = []
        for r in requests:
            text = "I don't know"
            for p in r.passages:
                m = re.search(r"answer: (\w+)", p)
                if m:
                    text = m.group(1)
                    break
            out.append(Generation(text, self.name, 10, 1))
        return out
