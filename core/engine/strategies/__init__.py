"""Answer strategies; see base.py for the interface and the registry."""

from core.engine.strategies.base import (
    AnswerStrategy,
    ClusterInfo,
    EngineContext,
    EngineParams,
    SourceVote,
    StrategyResult,
    available_strategies,
    get_strategy,
    register,
)

__all__ = [
    "AnswerStrategy",
    "ClusterInfo",
    "EngineContext",
    "EngineParams",
    "SourceVote",
    "StrategyResult",
    "available_strategies",
    "get_strategy",
    "register",
]
