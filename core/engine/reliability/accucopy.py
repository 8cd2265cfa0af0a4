"""How a source's reliability is estimated by default: AccuCopy ("accucopy", the
DEFAULT_ESTIMATOR), Bayes-optimal one-coin estimation that detects copying; without the
dependence detection, the same EM is the "onecoin" estimator.

The one-coin model: source i answers a query right with probability w_i, and otherwise gives
one of the wrong answers. Given the accuracies, the posterior of a query's truth weighs each
answer by its log-odds, ln(w_i / (1 - w_i)) (plus ln(K - 1) where the number K of candidate
answers is known; floored at zero, so a source no better than chance does not vote), and
leaves some mass to "none of the answers given" (an open-ended query's truth may be an answer
nobody gave). Estimation is expectation-maximisation: the E-step computes every query's
posterior over its answer labels, the M-step sets each accuracy to the Beta-smoothed
posterior-weighted agreement. Gold-checked queries fix their posterior to the reference
answer and count GOLD_WEIGHT times in the accuracies (semi-supervised).

The dependence-aware variant follows AccuCopy (Dong, Berti-Equille and Srivastava, "Integrating
conflicting data: the role of source dependence", VLDB 2009): two independent sources share a
*false* answer rarely (probability (1 - A_i)(1 - A_j) / n with n false values to choose
from), a copier (or a colluder) often. Each iteration scores every pair of sources by the
likelihood ratio of "dependent" (one copies the other's answer with probability c) against
"independent", over the answers they share (expected true and false, from the posteriors)
and the ones where they differ; the posterior of dependence discounts the votes: in each
query, a source's vote is multiplied by prod (1 - c * P(dependent with s')) over the sources
s' with the same answer that come before it in descending accuracy, so a bloc that repeats
one answer counts roughly once. Everything is matrix products over a sources x (queries x
labels) one-hot matrix, so a 1,000 x 100 matrix takes a few milliseconds per iteration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from core.engine.reliability.base import (
    ESTIMATORS,
    GOLD_NONE,
    GOLD_WEIGHT,
    MISSING,
    UNIFORM_PRIOR,
    Candidates,
    Dependence,
    LabelMatrix,
    Prior,
    ReliabilityResult,
    as_label_matrix,
    gold_counts,
    gold_vector,
    source_results,
)
from core.engine.reliability.cells import AnswerCells
from core.engine.reliability.weights import MAX_ACCURACY, TIE_BREAK, log_odds_weights

FloatArray = npt.NDArray[np.float64]
REPORTED_DEPENDENCE = 0.01  # pairs less likely dependent than this are left out of the result


@dataclass(frozen=True)
class CopyModel:
    """AccuCopy's parameters: prior probability that two sources are dependent, the share
    of answers a dependent source copies, and how many false values a query has to offer."""

    prior: float = 0.2
    rate: float = 0.8
    false_values: float = 100.0  # open-ended answers (times, names, free text) have many wrong values


def one_coin(
    votes: LabelMatrix,
    prior: Prior = UNIFORM_PRIOR,
    gold: Mapping[int, int] | None = None,
    *,
    copy: CopyModel | None = None,
    gold_weight: float = GOLD_WEIGHT,
    other_mass: float = 1.0,
    n_candidates: Sequence[int | None] | None = None,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> ReliabilityResult:
    """One-coin EM on a queries x sources label matrix (MISSING = -1 for IDK); with ``copy``
    the AccuCopy dependence discount is applied in every E-step."""
    labels = as_label_matrix(votes)
    n_queries, n_sources = labels.shape
    cells = AnswerCells.of(labels)
    n_labels = cells.n_labels
    counts = np.bincount(cells.cell, minlength=n_queries * n_labels).astype(np.float64).reshape(n_queries, n_labels)
    present = counts > 0
    known_k = None if n_candidates is None else np.asarray([k or 0 for k in n_candidates], dtype=np.float64)
    gold_labels = gold_vector(gold, n_queries)
    gold_rows = gold_labels != MISSING
    gold_post = np.zeros((n_queries, n_labels))
    fixed = gold_rows & (gold_labels >= 0)
    gold_post[np.nonzero(fixed)[0], gold_labels[fixed]] = 1.0
    row_weight = np.where(gold_rows, gold_weight, 1.0)
    weighted_answers = np.bincount(cells.source, weights=row_weight[cells.query], minlength=n_sources)

    # Start from the majority vote (one-hot on each query's most given answer: vote shares
    # would start every source below 0.5 when answers scatter, and the zero floor of the
    # log-odds weight would keep them there), then alternate M and E steps.
    post = _hard(counts, counts, present)
    post[gold_rows] = gold_post[gold_rows]
    accuracy = np.full(n_sources, prior.mean)
    discount = np.ones(len(cells.cell))
    if gold_rows.any():
        # Gold first: sources checked on gold start from their accuracy there, so a colluding
        # majority cannot set the starting answers that every later step would then follow.
        checked, right = gold_counts(labels, gold_labels)
        start = gold_start(checked, right, prior)
        if start is not None:
            post = _posterior(cells.scores(answer_weights(start, cells, known_k), discount), present, other_mass)
            post[gold_rows] = gold_post[gold_rows]
    dependence = np.zeros((n_sources, n_sources))
    iterations, converged = 0, False
    for _ in range(max_iter):
        iterations += 1
        # Hard EM: a source's accuracy is its (smoothed) agreement with each query's most
        # probable answer. Soft credit would leak into the "none of these" mass and the
        # many singleton answers of open questions, and drag every accuracy below 0.5.
        hard = _hard(post, counts, present)
        hard[gold_rows] = gold_post[gold_rows]
        credit = (hard * row_weight[:, None]).reshape(-1)
        agree = np.bincount(cells.source, weights=credit[cells.cell], minlength=n_sources)
        denom = weighted_answers + prior.alpha + prior.beta
        new_accuracy = np.clip(
            np.divide(agree + prior.alpha, denom, out=np.full(n_sources, 0.5), where=denom > 0),
            1.0 - MAX_ACCURACY,
            MAX_ACCURACY,
        )
        weights = answer_weights(new_accuracy, cells, known_k)
        if copy is not None:
            # Which shared answers are false is judged against the current best answers
            # (hard, as in AccuCopy): with soft posteriors a discounted bloc would make every
            # shared answer look a little false, and everyone a little dependent.
            fresh = _dependence(cells, _hard(post, counts, present), new_accuracy, copy)
            # Damped: copy detection and the truth feed each other, and undamped they can oscillate.
            dependence = fresh if iterations == 1 else 0.5 * (dependence + fresh)
            discount = _discount(cells, dependence, new_accuracy, copy.rate)
        score = cells.scores(weights, discount)
        post = _posterior(score, present, other_mass)
        post[gold_rows] = gold_post[gold_rows]
        change = float(np.abs(new_accuracy - accuracy).max()) if n_sources else 0.0
        accuracy = new_accuracy
        if change < tol:
            converged = True
            break

    score = cells.scores(answer_weights(accuracy, cells, known_k), discount)
    weights = log_odds_weights(accuracy)
    estimate = _argmax(score, counts, present)
    estimate[fixed] = gold_labels[fixed]
    none_right = gold_rows & (gold_labels == GOLD_NONE)
    estimate[none_right] = MISSING
    confidence = [
        1.0 if gold_rows[q] else (float(post[q, estimate[q]]) if estimate[q] != MISSING else 0.0)
        for q in range(n_queries)
    ]
    # Agreements count a GOLD_NONE query as wrong for every source that answered it.
    scored = estimate.copy()
    scored[none_right] = GOLD_NONE
    sources = source_results(accuracy, weights, labels, scored, gold_labels)
    pairs = _pairs(cells, _hard(post, counts, present), dependence) if copy is not None else []
    return ReliabilityResult(
        sources,
        [None if int(a) == MISSING else int(a) for a in estimate],
        iterations,
        converged,
        confidence=confidence,
        dependence=pairs,
    )


def gold_start(checked: npt.NDArray[np.int64], right: npt.NDArray[np.int64], prior: Prior) -> FloatArray | None:
    """Starting accuracies from the gold-checked answers alone (Beta-smoothed); sources with
    no gold answer start at the prior mean. None when no source answered a gold query."""
    if not checked.any():
        return None
    out: FloatArray = np.clip(
        (right + prior.alpha) / (checked + prior.alpha + prior.beta), 1.0 - MAX_ACCURACY, MAX_ACCURACY
    )
    return out


def answer_weights(accuracy: FloatArray, cells: AnswerCells, known_k: FloatArray | None) -> FloatArray:
    """Per answer: max(0, ln(w / (1 - w)) + ln(K - 1)) where the query's number K of
    candidate answers is known (e.g. 2 for yes/no), max(0, ln(w / (1 - w))) where it is not
    (open-ended answers)."""
    logit = np.log(accuracy / (1.0 - accuracy))[cells.source]
    if known_k is not None:
        logit = logit + np.log(np.maximum(known_k[cells.query] - 1.0, 1.0))
    out: FloatArray = np.maximum(logit, 0.0) + TIE_BREAK * accuracy[cells.source]
    return out


def _posterior(score: FloatArray, present: npt.NDArray[np.bool_], other_mass: float) -> FloatArray:
    """Softmax over the labels given, with ``other_mass`` for "none of them" (score 0)."""
    masked = np.where(present, score, -np.inf)
    top = np.maximum(masked.max(axis=1, keepdims=True), 0.0)
    top = np.where(np.isfinite(top), top, 0.0)
    expd = np.where(present, np.exp(masked - top), 0.0)
    denom = expd.sum(axis=1, keepdims=True) + other_mass * np.exp(-top)
    out: FloatArray = np.divide(expd, denom, out=np.zeros_like(expd), where=denom > 0)
    return out


def _hard(post: FloatArray, counts: FloatArray, present: npt.NDArray[np.bool_]) -> FloatArray:
    """Each query's most probable label as a one-hot row; a tie (equal score and equal
    count) is shared equally among the tied labels, so a tie-break credits nobody (else
    the source whose answers happen to get the smallest labels would win every tie and
    grow into a false authority). No credit for a query nobody answered."""
    key = np.where(present, post + 1e-9 * counts / (counts.sum(axis=1, keepdims=True) + 1.0), -np.inf)
    top = key.max(axis=1, keepdims=True)
    tied = present & np.isclose(key, top, rtol=0.0, atol=1e-12)
    n_tied = tied.sum(axis=1, keepdims=True)
    out: FloatArray = np.divide(tied.astype(np.float64), n_tied, out=np.zeros_like(post), where=n_tied > 0)
    return out


def _argmax(score: FloatArray, counts: FloatArray, present: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Best label per query: highest score, then most votes, then the smaller label."""
    key = np.where(present, score + 1e-9 * counts / (counts.sum(axis=1, keepdims=True) + 1.0), -np.inf)
    estimate: npt.NDArray[np.int64] = np.asarray(key.argmax(axis=1), dtype=np.int64)
    estimate[~present.any(axis=1)] = MISSING
    return estimate


def _pair_counts(cells: AnswerCells, post: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per pair of sources: queries both answered, expected same-and-true, same-and-false, different."""
    shared, same = cells.pair_constants()
    same_true = cells.same_weighted(post.reshape(-1))
    same_false = np.maximum(same - same_true, 0.0)
    different = np.maximum(shared - same, 0.0)
    return shared, same_true, same_false, different


def _dependence(cells: AnswerCells, post: FloatArray, accuracy: FloatArray, copy: CopyModel) -> FloatArray:
    """Posterior probability that each pair of sources is dependent (symmetric, zero diagonal)."""
    _, same_true, same_false, different = _pair_counts(cells, post)
    return dependence_probability(same_true, same_false, different, accuracy, copy)


def dependence_probability(
    same_true: FloatArray, same_false: FloatArray, different: FloatArray, accuracy: FloatArray, copy: CopyModel
) -> FloatArray:
    """sources x sources: the posterior probability that each pair is dependent, from the
    answers it shares (expected true and false) and those where it differs, under the
    sources' ``accuracy`` (AccuCopy's likelihood ratio; zero diagonal)."""
    ai, aj = accuracy[:, None], accuracy[None, :]
    c, n = copy.rate, max(copy.false_values, 1.0)
    true_ind = ai * aj
    false_ind = (1.0 - ai) * (1.0 - aj) / n
    mean_acc = (ai + aj) / 2.0  # the copied source is either one: average the two directions
    true_dep = mean_acc * c + true_ind * (1.0 - c)
    false_dep = (1.0 - mean_acc) * c + false_ind * (1.0 - c)
    llr = (
        same_true * np.log(true_dep / true_ind)
        + same_false * np.log(false_dep / false_ind)
        + different * math.log(1.0 - c)
    )
    logit = math.log(copy.prior / (1.0 - copy.prior)) + llr
    dep: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(logit, -500.0, 500.0)))
    np.fill_diagonal(dep, 0.0)
    return dep


def _discount(cells: AnswerCells, dependence: FloatArray, accuracy: FloatArray, rate: float) -> FloatArray:
    """Per answer: prod (1 - c * P(dep(s, s'))) over the sources s' that gave the same answer
    to the query and come before s in descending accuracy (ties: column order).

    log discount of answer k (source s, cell c) = sum over s' of m[s, s'] * x[s', c], with
    m[s, s'] = ln(1 - c * P(dep)) when s' comes first: the (s, c) entries of m @ x, computed
    a block of cells at a time so memory stays bounded."""
    n_sources = len(accuracy)
    order = np.lexsort((np.arange(n_sources), -accuracy))
    rank = np.empty(n_sources, dtype=np.int64)
    rank[order] = np.arange(n_sources)
    earlier = rank[None, :] < rank[:, None]  # earlier[s, s']: s' comes before s
    m = np.where(earlier, np.log(np.clip(1.0 - rate * dependence, 1e-12, 1.0)), 0.0)
    log_discount = np.zeros(len(cells.cell))
    xt = cells.xt  # cells x sources (CSR)
    block = max(1, 2_000_000 // max(n_sources, 1))
    for first in range(0, xt.shape[0], block):
        in_block = (cells.cell >= first) & (cells.cell < first + block)
        if not in_block.any():
            continue
        z = np.asarray(xt[first : first + block] @ m.T)  # z[c, s] = sum_s' x[s', c] * m[s, s']
        log_discount[in_block] = z[cells.cell[in_block] - first, cells.source[in_block]]
    out: FloatArray = np.exp(log_discount)
    return out


def _pairs(cells: AnswerCells, post: FloatArray, dependence: FloatArray) -> list[Dependence]:
    shared, same_true, same_false, different = _pair_counts(cells, post)
    # Pairs worth reporting: shared answers and a dependence above REPORTED_DEPENDENCE.
    a_idx, b_idx = np.nonzero(np.triu((shared > 0) & (dependence >= REPORTED_DEPENDENCE), k=1))
    return [
        Dependence(
            a=int(a),
            b=int(b),
            probability=float(dependence[a, b]),
            shared=int(shared[a, b] + 0.5),
            same_true=float(same_true[a, b]),
            same_false=float(same_false[a, b]),
            different=int(different[a, b] + 0.5),
        )
        for a, b in zip(a_idx, b_idx, strict=True)
    ]


@ESTIMATORS.register("onecoin")
@dataclass(frozen=True)
class OneCoin:
    """Bayes-optimal one-coin EM with log-odds weights (registered as "onecoin"); with a
    ``copy`` model, AccuCopy's dependence discount in every E-step (see AccuCopy)."""

    name: str = "onecoin"
    weight_scheme: str = "log-odds"
    detects_copying: bool = False
    copy: CopyModel | None = None
    gold_weight: float = GOLD_WEIGHT
    tol: float = 1e-6
    max_iter: int = 200

    def estimate(
        self,
        labels: LabelMatrix,
        *,
        prior: Prior = UNIFORM_PRIOR,
        gold: Mapping[int, int] | None = None,
        candidates: Candidates = None,
    ) -> ReliabilityResult:
        return one_coin(
            labels,
            prior,
            gold,
            copy=self.copy,
            gold_weight=self.gold_weight,
            n_candidates=candidates,
            tol=self.tol,
            max_iter=self.max_iter,
        )


@ESTIMATORS.register("accucopy")
@dataclass(frozen=True)
class AccuCopy(OneCoin):
    """One-coin EM with AccuCopy's copy detection and vote discounting ("accucopy")."""

    name: str = "accucopy"
    detects_copying: bool = True
    copy: CopyModel | None = CopyModel()
