"""Answer strategies: the contract (base), the registry, the shared steps and the built-ins."""

from core.engine.strategies.base import (
    AnswerGraph,
    AnswerStrategy,
    ClusterInfo,
    EngineContext,
    EngineParams,
    Evidence,
    GraphEdge,
    GraphNode,
    Requirement,
    SourceVote,
    StrategyResult,
    StrategyUnavailable,
    ensure_runnable,
    missing_requirements,
)
from core.engine.strategies.registry import (
    available_strategies,
    get_strategy,
    isolated_registry,
    register,
    runnable_strategies,
    strategy_class,
)

__all__ = [
    "AnswerGraph",
    "AnswerStrategy",
    "ClusterInfo",
    "EngineContext",
    "EngineParams",
    "Evidence",
    "GraphEdge",
    "GraphNode",
    "Requirement",
    "SourceVote",
    "StrategyResult",
    "StrategyUnavailable",
    "available_strategies",
    "ensure_runnable",
    "get_strategy",
    "isolated_registry",
    "missing_requirements",
    "register",
    "runnable_strategies",
    "strategy_class",
]
