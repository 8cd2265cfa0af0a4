"""Reliability per source and topic, estimated in the same run as the overall one.

A source's accuracy on topic t is its agreement with the estimated answers on the queries of
t, shrunk toward its overall accuracy (hierarchical: a Beta prior centred on the overall
accuracy, worth STRENGTH answers), so a topic with three answers moves a source a little and
a topic with thirty decides it:

    w_{s,t} = (agreements_{s,t} + STRENGTH * w_s) / (answers_{s,t} + STRENGTH)

and then, per source, pulled further toward w_s by how much its topics differ beyond their
sampling noise (empirical Bayes, `shrunk`): topics that differ by chance leave one number.

Queries belong to topics softly (core.engine.topics: a membership row per query), so a query
between two topics counts in both, by its share. The answers are then re-estimated with each
query's own weights (a source weighs, on a query, the mix of its topics' accuracies), and
the two steps repeat until the answers stop changing: a source wrong on one topic no longer
drags the answers of that topic with its overall weight.

Identification (core.engine.reliability.identify) is checked per topic as it is overall: a
colluding bloc can be the majority on one topic only, and there only the bloc's size chose
the answers. Such a topic's contested queries are proposed as checks, in turn with the
overall verdict's and the other topics' (identify.proposed_checks). It is not equalised:
where a bloc is the larger side of one topic, a majority vote there follows the bloc too,
and where the topic is merely small, equal votes threw away what the overall estimate
settled (measured: three colluders of nine, 40 queries: 0.45 against majority vote's 0.425
with topics equalised, 0.65 without, as with one reliability per source). The overall
estimate is still equalised when agreement does not identify it (identify.equalise).

A question's membership can also read its sources' answers (`answer_posterior`, used at
answer time by core.engine.steps.topic_weights): a question whose text sits between two
topics, and on which the sources wrong on one of them disagree with the rest, belongs mostly
to that one. The estimate's own re-vote keeps the text's membership: reading the estimation
queries' answers there too gained nothing on topic-hammer and cost the beta prior 0.2 points
(docs/benchmarks.md, 2026-11-28).

Pure numpy, no database; the run's services persist what it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt
from scipy import sparse

from core.engine.reliability.accucopy import REPORTED_DEPENDENCE, CopyModel, dependence_probability
from core.engine.reliability.base import (
    GOLD_WEIGHT,
    MISSING,
    Dependence,
    Identification,
    LabelMatrix,
    ReliabilityResult,
    TopicalReliability,
    TopicCell,
    gold_vector,
    interval_holding,
    wilson_interval,
)
from core.engine.reliability.iwmv import wmv_answers
from core.engine.reliability.weights import voting_weight

FloatMatrix = npt.NDArray[np.float64]

__all__ = [
    "ANSWER_TEMPER",
    "STRENGTH",
    "TopicCell",
    "TopicalReliability",
    "answer_posterior",
    "shrunk",
    "topical_reliability",
]

# The prior's weight, in answers: a topic's own evidence outweighs the overall number from
# about STRENGTH answers on (three answers all wrong move a source at 0.9 to 0.5, not to 0);
# the empirical-Bayes step of `shrunk` then keeps only differences beyond chance.
STRENGTH = 4.0
MAX_ROUNDS = 20
# A query counts in a topic's identification check when at least this share of it is there.
CORE_SHARE = 0.5


def shrunk(agreements: FloatMatrix, answers: FloatMatrix, overall: FloatMatrix, strength: float) -> FloatMatrix:
    """topics x sources accuracies: the source's overall accuracy (the estimator's), moved on
    each topic by how far the source's agreement rate there is from its agreement rate on all
    topics together. The topic's rate is smoothed toward the pooled rate by ``strength``
    pseudo-answers, and the move is pulled further toward zero by how much the source's topics
    really differ (empirical Bayes, per source: the spread of its topic rates beyond what
    their sampling noise explains). A source whose topics differ only by chance keeps its
    overall number on every topic; one right on some topics and wrong on others keeps the
    difference."""
    total_answers = answers.sum(axis=0)
    pooled = np.divide(agreements.sum(axis=0), total_answers, out=overall.copy(), where=total_answers > 0)
    smoothed = (agreements + strength * pooled[None, :]) / (answers + strength)
    p = np.clip(pooled, 0.05, 0.95)[None, :]
    noise = p * (1 - p) / (answers + strength)  # sampling variance of each cell
    has = answers > 0
    out = np.tile(overall, (agreements.shape[0], 1)).astype(np.float64)
    for j in range(agreements.shape[1]):
        rows = has[:, j]
        if rows.sum() < 2:
            continue
        deviation = smoothed[rows, j] - pooled[j]
        spread = max(0.0, float(np.mean(deviation**2) - np.mean(noise[rows, j])))
        keep = spread / (spread + noise[rows, j])
        out[rows, j] = np.clip(overall[j] + keep * deviation, 0.0, 1.0)
    return out


# How much the sources' answers move a question's topics from its text: the answers'
# log-likelihood under each topic is multiplied by this (1: Bayes' rule with the cells taken
# as exact; the floor below bounds what one answer can do). Measured on PoisonedRAG's
# topic-hammer (docs/benchmarks.md): 0.5 gained less, 2.0 no more.
ANSWER_TEMPER = 1.0
# Accuracies are held in [FLOOR, 1 - FLOOR] in the likelihood: one source's answer moves the
# odds between two topics by at most (1 - FLOOR) / FLOOR, whatever its cells say.
POSTERIOR_FLOOR = 0.05


def answer_posterior(
    prior: FloatMatrix,
    labels: LabelMatrix,
    accuracy: FloatMatrix,
    *,
    temper: float = ANSWER_TEMPER,
) -> FloatMatrix:
    """queries x topics: each query's topic membership after reading its sources' answers.

    ``prior``: queries x topics (the text's membership, rows summing to 1); ``labels``:
    queries x sources answer clusters (MISSING: no answer); ``accuracy``: topics x sources.
    Under topic t a query's answers have the one-coin likelihood (Dawid-Skene with one
    accuracy per source and topic) marginalised over its candidate answers, the clusters given
    and "none of them" (K candidates, each equally likely a priori):

        L_t = 1/K sum_c prod_s [a_st if l_s = c else (1 - a_st) / (K - 1)]

    and the posterior is prior_t * L_t ** temper, normalised. Evidence is weak by
    construction where it should be: one answer, or sources whose cells do not differ between
    topics, give every topic the same likelihood, and the text's membership stands."""
    n_queries, n_topics = prior.shape
    out = np.array(prior, dtype=np.float64, copy=True)
    if n_topics < 2:
        return out
    a = np.clip(accuracy, POSTERIOR_FLOOR, 1.0 - POSTERIOR_FLOOR)
    for q in range(n_queries):
        row = labels[q]
        answered = row >= 0
        if answered.sum() < 2:
            continue
        given = row[answered]
        clusters = np.unique(given)
        k = len(clusters) + 1
        right = np.log(a[:, answered])  # topics x answering sources
        wrong = np.log((1.0 - a[:, answered]) / (k - 1))
        # Per candidate (each cluster, then "none"): topics x log-likelihood.
        per_candidate = [np.where(given[None, :] == c, right, wrong).sum(axis=1) for c in clusters]
        per_candidate.append(wrong.sum(axis=1))
        stacked = np.stack(per_candidate, axis=1)
        top = stacked.max(axis=1, keepdims=True)
        log_likelihood = (top[:, 0] + np.log(np.exp(stacked - top).sum(axis=1))) - np.log(k)
        log_post = np.log(np.clip(prior[q], 1e-12, None)) + temper * (log_likelihood - log_likelihood.max())
        weights = np.exp(log_post - log_post.max())
        out[q] = weights / weights.sum()
    return out


def topic_dependence(
    labels: LabelMatrix, truth: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], accuracy: FloatMatrix
) -> list[Dependence]:
    """The pairs of sources dependent on these queries (``rows`` of ``labels``, the answers
    ``truth``), at AccuCopy's likelihood ratio with the topic's ``accuracy`` per source: the
    answers a pair shares that are false are the evidence; shared true answers are what two
    good sources give anyway. Only pairs with a shared answer and some dependence are listed
    (as AccuCopy reports them)."""
    sub, right_answer = labels[rows], truth[rows]
    answered = sub >= 0
    right = answered & (sub == right_answer[:, None])  # an answer is never MISSING
    # Pair counts as products of (query, answer) x source indicator matrices, so memory grows
    # with the answers given, not with queries x sources x sources.
    q_idx, s_idx = np.nonzero(answered)
    width = int(sub.max()) + 1 if q_idx.size else 1
    given = sparse.csr_matrix(
        (np.ones(q_idx.size), (q_idx * width + sub[q_idx, s_idx], s_idx)), shape=(len(rows) * width, sub.shape[1])
    )
    same = np.asarray((given.T @ given).todense(), dtype=np.float64)
    as_float = answered.astype(np.float64)
    shared = as_float.T @ as_float
    correct = right.astype(np.float64)
    same_true = correct.T @ correct  # two sources with the right answer gave the same one
    same_false = same - same_true
    different = shared - same
    clipped = np.clip(accuracy, POSTERIOR_FLOOR, 1.0 - POSTERIOR_FLOOR)  # a cell at 0 or 1 decides nothing alone
    probability = dependence_probability(same_true, same_false, different, clipped, CopyModel())
    a_idx, b_idx = np.nonzero(np.triu((shared > 0) & (probability >= REPORTED_DEPENDENCE), k=1))
    return [
        Dependence(
            a=int(a),
            b=int(b),
            probability=float(probability[a, b]),
            shared=int(shared[a, b]),
            same_true=float(same_true[a, b]),
            same_false=float(same_false[a, b]),
            different=int(different[a, b]),
        )
        for a, b in zip(a_idx, b_idx, strict=True)
    ]


def _weights(accuracy: FloatMatrix, n_sources: int, scheme: str, candidates: Sequence[int | None]) -> FloatMatrix:
    """queries x sources voting weights from per-query accuracies."""
    out = np.zeros_like(accuracy)
    for q in range(accuracy.shape[0]):
        k = candidates[q] if q < len(candidates) else None
        out[q] = [voting_weight(a, n_sources, scheme=scheme, n_candidates=k) for a in accuracy[q]]
    return out


def topical_reliability(
    labels: LabelMatrix,
    result: ReliabilityResult,
    membership: FloatMatrix,
    keys: Sequence[str],
    *,
    scheme: str = "paper",
    candidates: Sequence[int | None] = (),
    gold: Mapping[int, int] | None = None,
    strength: float = STRENGTH,
    identify_topics: bool = True,
) -> TopicalReliability:
    """Per-topic reliabilities of the sources of ``labels`` around the overall ``result``.

    ``membership``: queries x topics, rows summing to 1. ``gold``: checked rows and their gold
    labels (GOLD_NONE: none of the answers), fixed and counted GOLD_WEIGHT times."""
    from core.engine.reliability.identify import identify

    n_queries, n_sources = labels.shape
    n_topics = membership.shape[1] if membership.ndim == 2 else 0
    if n_topics == 0 or membership.shape[0] != n_queries:
        raise ValueError("membership must have one row per query and one column per topic")
    overall = np.array([s.accuracy for s in result.sources], dtype=np.float64)
    gold_labels = gold_vector(gold, n_queries)
    gold_rows = gold_labels != MISSING
    row_weight = np.where(gold_rows, GOLD_WEIGHT, 1.0)
    answered = labels >= 0
    truth = np.array([MISSING if a is None else int(a) for a in result.answers], dtype=np.int64)
    truth[gold_rows] = gold_labels[gold_rows]
    accuracy = np.tile(overall, (n_topics, 1))
    rounds = 0
    while rounds < MAX_ROUNDS:
        rounds += 1
        agree = (labels == truth[:, None]) & answered
        mass = membership * row_weight[:, None]  # queries x topics
        agreements = mass.T @ agree.astype(np.float64)  # topics x sources
        answers = mass.T @ answered.astype(np.float64)
        accuracy = shrunk(agreements, answers, overall, strength)
        per_query = membership @ accuracy  # queries x sources
        new_truth = wmv_answers(labels, _weights(per_query, n_sources, scheme, candidates))
        new_truth[gold_rows] = gold_labels[gold_rows]
        if np.array_equal(new_truth, truth):
            break
        truth = new_truth
    agree = (labels == truth[:, None]) & answered
    agreements = membership.T @ agree.astype(np.float64)
    answers = membership.T @ answered.astype(np.float64)

    found: list[Identification | None] = [None] * n_topics
    if identify_topics and n_topics > 1:
        core = membership.argmax(axis=1)
        for t in range(n_topics):
            rows = np.flatnonzero((core == t) & (membership[:, t] >= CORE_SHARE))
            if len(rows) == 0:
                continue
            sub = ReliabilityResult(
                [replace(s, accuracy=float(accuracy[t, j])) for j, s in enumerate(result.sources)],
                [None if truth[q] == MISSING else int(truth[q]) for q in rows],
                rounds,
                True,
            )
            position = {int(q): i for i, q in enumerate(rows)}
            sub_gold = {position[q]: int(g) for q, g in (gold or {}).items() if int(q) in position}
            verdict = identify(labels[rows], sub, gold=sub_gold)
            verdict = replace(
                verdict,
                contested=[int(rows[i]) for i in verdict.contested],
                checks=[int(rows[i]) for i in verdict.checks],
            )
            found[t] = verdict
    cells = [
        [
            TopicCell(
                accuracy=float(accuracy[t, j]),
                weight=voting_weight(float(accuracy[t, j]), n_sources, scheme=scheme),
                answers=float(answers[t, j]),
                agreements=float(agreements[t, j]),
                interval=interval_holding(
                    wilson_interval(int(round(agreements[t, j])), int(round(answers[t, j]))), float(accuracy[t, j])
                ),
            )
            for j in range(n_sources)
        ]
        for t in range(n_topics)
    ]
    return TopicalReliability(
        dependence=[
            topic_dependence(labels, truth, np.flatnonzero(membership.argmax(axis=1) == t), accuracy[t])
            for t in range(n_topics)
        ],
        keys=list(keys),
        cells=cells,
        answers=[None if a == MISSING else int(a) for a in truth],
        identification=found,
        queries=[float(x) for x in membership.sum(axis=0)],
        rounds=rounds,
    )
