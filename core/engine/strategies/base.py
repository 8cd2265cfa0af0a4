"""The answer-strategy interface, its inputs and outputs, and the strategy registry.

A strategy turns a question into a StrategyResult using the engine context (retriever,
embedder, generator, NLI, sources). New strategies plug in with @register("name") and then
appear in get_strategy / available_strategies (the benchmark and the CLI list those).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from core.engine.backends.generation.base import Generator
from core.engine.backends.nli import NLI
from core.engine.types import CallStats, Embedder, Passage, Retriever, SourceInfo


@dataclass(frozen=True)
class EngineParams:
    kappa: int = 4
    k: int = 3  # passages per source
    tau: float = 0.1  # f_align threshold
    strict_clustering: bool = False
    pooled_k: int = 10  # Vanilla RAG / RobustRAG pool size
    oracle_reliabilities: dict[int, float] | None = None  # benchmark only (wmv-oracle)
    robust_alpha: float = 0.3
    robust_beta: int = 3


@dataclass
class EngineContext:
    retriever: Retriever
    embedder: Embedder
    generator: Generator
    nli: NLI
    sources: list[SourceInfo]
    params: EngineParams = field(default_factory=EngineParams)


@dataclass
class SourceVote:
    source_id: int
    source_name: str
    raw_response: str
    response: str  # after f_align (IDK when filtered)
    filtered: bool
    align_score: float
    cluster: int | None
    weight: float
    passages: list[Passage]


@dataclass
class ClusterInfo:
    id: int
    label: str  # representative answer
    members: list[int]  # source ids
    weight: float


@dataclass
class StrategyResult:
    answer: str
    confidence: float
    strategy: str
    backend: str
    votes: list[SourceVote] = field(default_factory=list)
    clusters: list[ClusterInfo] = field(default_factory=list)
    stats: CallStats = field(default_factory=CallStats)
    seconds: float = 0.0


class AnswerStrategy(ABC):
    name: str = ""
    description: str = ""

    @abstractmethod
    def answer(self, question: str, ctx: EngineContext) -> StrategyResult: ...


_REGISTRY: dict[str, type[AnswerStrategy]] = {}


def register(name: str) -> Callable[[type[AnswerStrategy]], type[AnswerStrategy]]:
    """Class decorator: make a strategy available under `name`."""

    def decorate(cls: type[AnswerStrategy]) -> type[AnswerStrategy]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"strategy {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def get_strategy(name: str) -> AnswerStrategy:
    _load_builtins()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; available: {available_strategies()}") from None


def available_strategies() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def _load_builtins() -> None:
    # Importing the modules runs their @register decorators.
    from core.engine.strategies import baselines, ra_rag  # noqa: F401
