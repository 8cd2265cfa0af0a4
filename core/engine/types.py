"""Plain data types shared by the engine, the Django shell around it and the benchmark.

Nothing here imports Django: the engine is framework-free so it can be unit-tested and
reused by the benchmark on an in-memory corpus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
SourceId = int


@dataclass(frozen=True)
class Passage:
    """One retrieved chunk, with its provenance."""

    chunk_id: int
    source_id: SourceId
    text: str
    distance: float = 0.0  # cosine distance to the query (smaller is closer)
    document_id: int | None = None
    title: str = ""
    url: str = ""


class Retriever(Protocol):
    """Per-source and pooled vector retrieval (PostgreSQL or in-memory implementations)."""

    def top_k_per_source(
        self, query_vector: Vector, sources: Sequence[SourceId], k: int
    ) -> dict[SourceId, list[Passage]]:
        """The k nearest chunks of every given source; a source with no chunks maps to []."""
        ...

    def top_k_pooled(self, query_vector: Vector, k: int) -> list[Passage]:
        """The k nearest chunks over all active sources (the Vanilla RAG baseline)."""
        ...


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True)
class SourceInfo:
    """What the engine knows of a source when answering.

    ``weight`` is the voting weight v_i that WMV and kappa-RRSS use; ``accuracy`` is the
    estimated accuracy w_i in [0, 1] shown to users (``Source.reliability`` in the
    database). See :mod:`core.engine.reliability.weights` for how one becomes the other.
    """

    id: SourceId
    name: str
    weight: float = 1.0  # v_i; 1.0 (every source equal) before any estimation run
    answers_count: int = 0  # how many non-IDK answers the estimate rests on
    accuracy: float | None = None  # w_i; None when never estimated
    # w_i per topic of the latest run (EngineContext.topics order); empty: one number for all
    topic_accuracy: tuple[float, ...] = ()


# JSON as the product stores and serves it. The alias is recursive, so mypy checks what is
# put in; a value read back is narrowed (isinstance) or decoded by a typed decoder
# (strategies/codec.py) before use.
JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]

# Older names, kept for outside callers: a JSON object, and raw parameters as a user sent them.
JSON = JSONObject
Params = Mapping[str, JSONValue]


@dataclass
class CallStats:
    """Generator cost accounting for one question."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: JSONObject = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
