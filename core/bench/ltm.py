"""LTM, the Latent Truth Model (B. Zhao, B. I. P. Rubinstein, J. Gemmell and J. Han, "A Bayesian
approach to discovering truth from conflicting sources for data integration", VLDB 2012): a
published truth-discovery baseline for the Flights and Books benchmarks.

Every (item, value) pair claimed by some source is a *fact* with a latent truth t ~ Bernoulli
(theta), theta ~ Beta(beta_1, beta_0). A source that lists the item asserts the facts of its
value (a positive claim) and denies the item's other facts (negative claims). Each source has
a false-positive rate phi_0 ~ Beta(alpha_01, alpha_00) and a sensitivity phi_1 ~ Beta(alpha_11,
alpha_10); collapsed Gibbs sampling draws every fact's truth given the others':

    p(t_f = i | rest) ∝ beta_i * prod over f's claims c of
        (n[s_c, i, o_c] + alpha_{i, o_c}) / (n[s_c, i, 1] + n[s_c, i, 0] + alpha_{i, 1} + alpha_{i, 0})

n counting, without f, the source's claims on facts currently true (i = 1) or false (i = 0)
with observation o. A fact's probability is its share of true samples after burn-in. LTM
allows several true values per item; Flights and Books are scored with one, so an item's
value is its most probable fact. A source's accuracy is reported as its sensitivity's
posterior mean. The priors are the paper's (a strong prior on specificity: false positives
are rare); the sampling is seeded, so a run is deterministic.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

Task = tuple[str, str]


@dataclass(frozen=True)
class LTMPrior:
    beta_true: float = 10.0  # Beta prior of a fact's truth: beta_1, beta_0
    beta_false: float = 10.0
    fp_true: float = 10.0  # alpha_01, alpha_00: a source's false-positive rate (strong: FPs are rare)
    fp_false: float = 1000.0
    sens_true: float = 50.0  # alpha_11, alpha_10: its sensitivity
    sens_false: float = 50.0


@dataclass
class LTMResult:
    truths: dict[Task, str]
    probability: dict[tuple[Task, str], float]  # a fact's posterior probability of truth
    sensitivity: dict[str, float]
    specificity: dict[str, float]


def ltm(
    claims: Sequence[tuple[str, Task, str]],
    prior: LTMPrior = LTMPrior(),
    *,
    iterations: int = 300,
    burn_in: int = 100,
    thin: int = 5,
    seed: int = 0,
) -> LTMResult:
    """LTM over (source, item, value) claims; a source's first claim of an item counts."""
    listed: dict[Task, dict[str, str]] = defaultdict(dict)
    for source, task, value in claims:
        listed[task].setdefault(source, value)
    sources = sorted({s for by in listed.values() for s in by})
    index = {s: j for j, s in enumerate(sources)}
    facts: list[tuple[Task, str]] = []
    fact_claims: list[list[tuple[int, int]]] = []  # per fact: (source index, observation)
    for task in sorted(listed):
        by = listed[task]
        for value in sorted(set(by.values())):
            facts.append((task, value))
            fact_claims.append([(index[s], int(v == value)) for s, v in sorted(by.items())])
    alpha = ((prior.fp_false, prior.fp_true), (prior.sens_false, prior.sens_true))  # alpha[i][o]
    beta = (prior.beta_false, prior.beta_true)
    rng = random.Random(seed)
    # Start: a fact is true when most of the item's sources assert it (majority vote).
    truth = [int(2 * sum(o for _, o in fc) >= len(fc)) for fc in fact_claims]
    n = [[[0, 0], [0, 0]] for _ in sources]  # n[s][i][o]
    for t, fc in zip(truth, fact_claims, strict=True):
        for s, o in fc:
            n[s][t][o] += 1
    true_samples = [0] * len(facts)
    samples = 0
    for sweep in range(iterations):
        for f, fc in enumerate(fact_claims):
            t = truth[f]
            for s, o in fc:
                n[s][t][o] -= 1
            log_p = [math.log(beta[0]), math.log(beta[1])]
            for i in (0, 1):
                a0, a1 = alpha[i]
                for s, o in fc:
                    counts = n[s][i]
                    log_p[i] += math.log(counts[o] + alpha[i][o]) - math.log(counts[0] + counts[1] + a0 + a1)
            top = max(log_p)
            p_true = math.exp(log_p[1] - top) / (math.exp(log_p[0] - top) + math.exp(log_p[1] - top))
            t = int(rng.random() < p_true)
            truth[f] = t
            for s, o in fc:
                n[s][t][o] += 1
        if sweep >= burn_in and (sweep - burn_in) % thin == 0:
            samples += 1
            for f, t in enumerate(truth):
                true_samples[f] += t
    probability = {fact: true_samples[f] / max(samples, 1) for f, fact in enumerate(facts)}
    truths: dict[Task, str] = {}
    for task, by in listed.items():
        given = [v for v in by.values()]
        # The most probable fact; ties to the most listed value, then the smaller one.
        truths[task] = max(sorted(set(given)), key=lambda v: (probability[(task, v)], given.count(v)))
    sensitivity = {
        s: (n[j][1][1] + prior.sens_true) / (n[j][1][1] + n[j][1][0] + prior.sens_true + prior.sens_false)
        for j, s in enumerate(sources)
    }
    specificity = {
        s: (n[j][0][0] + prior.fp_false) / (n[j][0][0] + n[j][0][1] + prior.fp_false + prior.fp_true)
        for j, s in enumerate(sources)
    }
    return LTMResult(truths, probability, sensitivity, specificity)
