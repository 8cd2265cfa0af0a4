"""Source-reliability estimators behind one contract, and their registry.

- ``base``: the :class:`Estimator` protocol, its result types, the label-matrix helpers;
- ``weights``: the one place where an accuracy w_i becomes a voting weight v_i;
- ``accucopy``: the default estimator (DEFAULT_ESTIMATOR): Bayes-optimal one-coin EM with
  log-odds weights and AccuCopy's copy / collusion detection and vote discounting
  ("accucopy"), and the same EM without the dependence detection ("onecoin");
- ``iwmv``: iterative weighted majority voting (RA-RAG's estimator, kept for the reproduction);
- ``truthfinder``: TruthFinder, on generic claims and as an estimator.

Estimators are registered by name; ``get_estimator("iwmv")`` returns a fresh one.
A new estimator plugs in with ``register_estimator(name, factory)``.
"""

from __future__ import annotations

from collections.abc import Callable

from core.engine.reliability.accucopy import AccuCopy, CopyModel, OneCoin
from core.engine.reliability.base import (
    GOLD_NONE,
    MISSING,
    UNIFORM_PRIOR,
    Dependence,
    Estimator,
    Prior,
    ReliabilityResult,
    SourceReliability,
    interval_holding,
    to_matrix,
    wilson_interval,
)
from core.engine.reliability.iwmv import IWMV
from core.engine.reliability.truthfinder import TruthFinderEstimator
from core.engine.reliability.weights import voting_weight

__all__ = [
    "DEFAULT_ESTIMATOR",
    "GOLD_NONE",
    "IWMV",
    "AccuCopy",
    "CopyModel",
    "Dependence",
    "OneCoin",
    "MISSING",
    "UNIFORM_PRIOR",
    "Estimator",
    "Prior",
    "ReliabilityResult",
    "SourceReliability",
    "TruthFinderEstimator",
    "available_estimators",
    "get_estimator",
    "interval_holding",
    "register_estimator",
    "to_matrix",
    "voting_weight",
    "wilson_interval",
]

DEFAULT_ESTIMATOR = "accucopy"  # chosen by the benchmark: see docs/benchmarks.md

_REGISTRY: dict[str, Callable[[], Estimator]] = {}


def register_estimator(name: str, factory: Callable[[], Estimator]) -> None:
    """Make ``factory()`` available as ``get_estimator(name)``; a name is taken only once."""
    if name in _REGISTRY and _REGISTRY[name] is not factory:
        raise ValueError(f"estimator {name!r} is already registered")
    _REGISTRY[name] = factory


def get_estimator(name: str) -> Estimator:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown estimator {name!r}; available: {available_estimators()}") from None
    return factory()


def available_estimators() -> list[str]:
    return sorted(_REGISTRY)


register_estimator("iwmv", IWMV)
register_estimator("truthfinder", TruthFinderEstimator)
register_estimator("onecoin", OneCoin)
register_estimator("accucopy", AccuCopy)
