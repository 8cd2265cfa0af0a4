"""Source-reliability estimators behind one contract, and their registry.

- ``base``: the :class:`Estimator` protocol, its result types, the label-matrix helpers;
- ``weights``: the one place where an accuracy w_i becomes a voting weight v_i;
- ``accucopy``: the default estimator (DEFAULT_ESTIMATOR): Bayes-optimal one-coin EM with
  log-odds weights and AccuCopy's copy / collusion detection and vote discounting
  ("accucopy"), and the same EM without the dependence detection ("onecoin");
- ``iwmv``: iterative weighted majority voting (RA-RAG's estimator, kept for the reproduction);
- ``truthfinder``: TruthFinder, on generic claims and as an estimator.

Estimators are registered by name (``@ESTIMATORS.register("iwmv")`` on the class, the
one registration idiom of core.engine.registry); ``get_estimator("iwmv")`` returns a fresh
one. A new estimator plugs in with the decorator in its module, imported here.
"""

from __future__ import annotations

from core.engine.reliability.accucopy import AccuCopy, CopyModel, OneCoin
from core.engine.reliability.base import (
    ESTIMATORS,
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
    "ESTIMATORS",
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
    "to_matrix",
    "voting_weight",
    "wilson_interval",
]

DEFAULT_ESTIMATOR = "accucopy"  # chosen by the benchmark: see docs/benchmarks.md


def get_estimator(name: str) -> Estimator:
    """A fresh estimator of the registered name."""
    return ESTIMATORS.get(name)()


def available_estimators() -> list[str]:
    return ESTIMATORS.names()
