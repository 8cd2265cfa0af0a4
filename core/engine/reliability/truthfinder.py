"""TruthFinder (Yin, Han and Yu, "Truth discovery with multiple conflicting information
providers on the web", KDD 2007).

Source trustworthiness t(w) is the mean confidence of the facts it provides; a fact's
confidence s(f) comes from the trustworthiness scores tau(w) = -ln(1 - t(w)) of its
providers, adjusted by the implication of the other facts about the same object
(imp(f' -> f) = sim(f', f) - base_sim, weighted by rho), and squashed by a logistic
function with dampening factor gamma. The two are iterated until the trust vector stops
changing (cosine similarity).

:func:`truthfinder` works on claims given as (task, source, value) triples with a pluggable
value similarity (the benchmark runs it on Flights and Books). :class:`TruthFinderEstimator`
runs it on a queries x sources label matrix (task = query, value = cluster label, exact
similarity) behind the :class:`~core.engine.reliability.base.Estimator` contract.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from core.engine.reliability.base import (
    ESTIMATORS,
    MISSING,
    UNIFORM_PRIOR,
    Candidates,
    LabelMatrix,
    Prior,
    ReliabilityResult,
    as_label_matrix,
    gold_vector,
    source_results,
)
from core.engine.reliability.weights import voting_weight


class _Key(Hashable, Protocol):
    """Tasks, sources and values are hashable and ordered (sorted for determinism)."""

    def __lt__(self, other: Any, /) -> bool: ...


T = TypeVar("T", bound=_Key)  # task (object)
S = TypeVar("S", bound=_Key)  # source (provider)
V = TypeVar("V", bound=_Key)  # value (fact)


@dataclass
class TruthFinderResult(Generic[T, S, V]):
    truths: dict[T, V]
    trust: dict[S, float]  # t(w)
    confidence: dict[tuple[T, V], float]  # (task, value) -> s(f)
    iterations: int
    converged: bool = True


def exact_similarity(a: object, b: object) -> float:
    """Only equal values support each other."""
    return 1.0 if a == b else 0.0


def truthfinder(
    claims: Iterable[tuple[T, S, V]],
    similarity: Callable[[V, V], float] = exact_similarity,
    initial_trust: float = 0.9,
    gamma: float = 0.3,
    rho: float = 0.5,
    base_sim: float = 0.5,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
) -> TruthFinderResult[T, S, V]:
    """Truths per task and trust per source from (task, source, value) claims.

    Deterministic: sources, tasks and each task's values are visited in sorted order and
    a tie in confidence goes to the smallest value.
    """
    triples = list(claims)
    if not triples:
        return TruthFinderResult({}, {}, {}, 0, True)
    sources = sorted({source for _task, source, _value in triples})
    source_index = {s: i for i, s in enumerate(sources)}
    by_task: dict[T, list[tuple[S, V]]] = {}
    for task, source, value in triples:
        by_task.setdefault(task, []).append((source, value))

    # Facts are (task, value); providers[f] lists source indices; implication per task.
    facts: list[tuple[T, V]] = []
    providers: list[list[int]] = []
    task_slices: list[tuple[int, int, npt.NDArray[np.float64]]] = []
    for task in sorted(by_task):
        task_claims = by_task[task]
        values = sorted({value for _source, value in task_claims})
        start = len(facts)
        for value in values:
            facts.append((task, value))
            providers.append([source_index[s] for s, v in task_claims if v == value])
        imp = np.array(
            [
                [0.0 if i == j else similarity(vi, vj) - base_sim for j, vj in enumerate(values)]
                for i, vi in enumerate(values)
            ]
        )  # imp[i, j] = imp(f_i -> f_j)
        task_slices.append((start, len(facts), imp))

    claims_of_source: list[list[int]] = [[] for _ in sources]
    for f, provs in enumerate(providers):
        for s in provs:
            claims_of_source[s].append(f)

    trust = np.full(len(sources), initial_trust)
    confidence = np.zeros(len(facts))
    iterations = 0
    converged = False
    for iteration in range(1, max_iterations + 1):
        iterations = iteration
        tau = -np.log(np.clip(1.0 - trust, 1e-12, None))
        sigma = np.array([tau[p].sum() for p in providers])
        adjusted = sigma.copy()
        for start, end, imp in task_slices:
            adjusted[start:end] += rho * (sigma[start:end] @ imp)
        confidence = 1.0 / (1.0 + np.exp(-gamma * adjusted))
        new_trust = np.array([confidence[fs].mean() if fs else initial_trust for fs in claims_of_source])
        cosine = float(new_trust @ trust / (np.linalg.norm(new_trust) * np.linalg.norm(trust)))
        trust = new_trust
        if 1.0 - cosine < tolerance:
            converged = True
            break

    truths: dict[T, V] = {}
    for start, end, _imp in task_slices:
        best = start + int(np.argmax(confidence[start:end]))
        task, value = facts[best]
        truths[task] = value
    return TruthFinderResult(
        truths=truths,
        trust={s: float(trust[i]) for i, s in enumerate(sources)},
        confidence={f: float(confidence[i]) for i, f in enumerate(facts)},
        iterations=iterations,
        converged=converged,
    )


@ESTIMATORS.register("truthfinder")
@dataclass(frozen=True)
class TruthFinderEstimator:
    """TruthFinder on a label matrix (registered as "truthfinder").

    Claims are (query, source column, cluster label) for every non-MISSING cell; labels of
    one query imply each other through ``similarity`` (exact by default: different
    clusters are different answers). A source's accuracy is its trustworthiness t(w); a
    source with no answer at all gets the prior mean (TruthFinder itself has no prior). Its
    answers and agreements are counted against TruthFinder's truths (the Wilson interval is
    on that agreement rate) and its weight is ``voting_weight(t(w), N)``.
    """

    name: str = "truthfinder"
    similarity: Callable[[int, int], float] = exact_similarity
    initial_trust: float = 0.9
    gamma: float = 0.3
    rho: float = 0.5
    base_sim: float = 0.5
    tolerance: float = 1e-6
    max_iterations: int = 100

    weight_scheme: str = "paper"

    def estimate(
        self,
        labels: LabelMatrix,
        *,
        prior: Prior = UNIFORM_PRIOR,
        gold: Mapping[int, int] | None = None,
        candidates: Candidates = None,
    ) -> ReliabilityResult:
        """``gold`` fixes the reported truth of gold-checked queries and their gold counts;
        TruthFinder's own iteration has no notion of anchors, so trust is not reweighted."""
        labels = as_label_matrix(labels)
        n_queries, n_sources = labels.shape
        rows, cols = np.nonzero(labels != MISSING)
        claims = [(int(q), int(s), int(labels[q, s])) for q, s in zip(rows, cols, strict=True)]
        result = truthfinder(
            claims,
            similarity=self.similarity,
            initial_trust=self.initial_trust,
            gamma=self.gamma,
            rho=self.rho,
            base_sim=self.base_sim,
            tolerance=self.tolerance,
            max_iterations=self.max_iterations,
        )
        truths: list[int | None] = [result.truths.get(q) for q in range(n_queries)]
        estimate = np.array([MISSING if t is None else t for t in truths], dtype=np.int64)
        gold_labels = gold_vector(gold, n_queries)
        gold_rows = gold_labels != MISSING
        estimate[gold_rows] = gold_labels[gold_rows]
        truths = [None if int(t) < 0 else int(t) for t in estimate]
        accuracy = np.array([result.trust.get(j, prior.mean) for j in range(n_sources)], dtype=np.float64)
        weights = np.array([voting_weight(float(a), n_sources) for a in accuracy], dtype=np.float64)
        sources = source_results(accuracy, weights, labels, estimate, gold_labels)
        return ReliabilityResult(sources, truths, result.iterations, result.converged)
