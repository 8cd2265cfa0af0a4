"""TruthFinder (Yin, Han and Yu, "Truth discovery with multiple conflicting information
providers on the web", KDD 2007).

Source trustworthiness t(w) is the mean confidence of the facts it provides; a fact's
confidence s(f) comes from the trustworthiness scores tau(w) = -ln(1 - t(w)) of its
providers, adjusted by the implication of the other facts about the same object
(imp(f' -> f) = sim(f', f) - base_sim, weighted by rho), and squashed by a logistic
function with dampening factor gamma. The two are iterated until the trust vector stops
changing (cosine similarity).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.bench.truth import Claim, group_by_task

Similarity = Callable[[str, str], float]


@dataclass
class TruthFinderResult:
    truths: dict[str, str]
    trust: dict[str, float]
    confidence: dict[tuple[str, str], float]  # (task, value) -> s(f)
    iterations: int


def exact_similarity(a: str, b: str) -> float:
    return 1.0 if a == b else 0.0


def set_similarity(a: str, b: str, sep: str = ";") -> float:
    """Jaccard similarity of two separator-joined sets (author surnames)."""
    sa, sb = set(a.split(sep)), set(b.split(sep))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def time_similarity(a: str, b: str, scale_minutes: float = 5.0) -> float:
    """Times "HH:MM" a few minutes apart support each other; distant ones conflict."""

    def minutes(t: str) -> int:
        h, m = t.split(":")
        return int(h) * 60 + int(m)

    delta = abs(minutes(a) - minutes(b))
    delta = min(delta, 24 * 60 - delta)
    return math.exp(-delta / scale_minutes)


def truthfinder(
    claims: Sequence[Claim],
    similarity: Similarity = exact_similarity,
    initial_trust: float = 0.9,
    gamma: float = 0.3,
    rho: float = 0.5,
    base_sim: float = 0.5,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
) -> TruthFinderResult:
    sources = sorted({c.source for c in claims})
    source_index = {s: i for i, s in enumerate(sources)}
    by_task = group_by_task(claims)

    # Facts are (task, value); providers[f] lists source indices; implication per task.
    facts: list[tuple[str, str]] = []
    providers: list[list[int]] = []
    task_slices: list[tuple[int, int, np.ndarray]] = []
    for task, task_claims in sorted(by_task.items()):
        values = sorted({c.value for c in task_claims})
        start = len(facts)
        for value in values:
            facts.append((task, value))
            providers.append([source_index[c.source] for c in task_claims if c.value == value])
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
            break

    truths: dict[str, str] = {}
    for start, end, _imp in task_slices:
        best = start + int(np.argmax(confidence[start:end]))
        task, value = facts[best]
        truths[task] = value
    return TruthFinderResult(
        truths=truths,
        trust={s: float(trust[i]) for i, s in enumerate(sources)},
        confidence={f: float(confidence[i]) for i, f in enumerate(facts)},
        iterations=iterations,
    )
