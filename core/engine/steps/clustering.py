"""Semantic clustering of answers (Kuhn et al., 2023), so paraphrases vote together.

Greedy over distinct normalised non-IDK answers: an answer joins the first cluster whose
representative it matches, otherwise it opens a new one. Two answers match when their
normalised forms are equal or one contains the other, or when the NLI model finds no
contradiction either way and they are not neutral both ways (strict: entailment both ways).
IDK is never clustered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.backends.nli import NLI
from core.engine.lexical import same_answer_text
from core.engine.text import is_idk, normalize_answer


@dataclass(frozen=True)
class Clustering:
    labels: list[int | None]  # cluster id per input answer, None for IDK
    representatives: list[str]  # per cluster: its most-weighted member (first on ties)
    members: list[list[int]]  # per cluster: indices of the input answers


def _label(probs: tuple[float, float, float]) -> int:
    """0 entailment, 1 neutral, 2 contradiction."""
    return max(range(3), key=lambda i: probs[i])


def cluster_answers(
    answers: Sequence[str],
    nli: NLI | None = None,
    question: str = "",
    strict: bool = False,
    weights: Sequence[float] | None = None,
) -> Clustering:
    weights = list(weights) if weights is not None else [1.0] * len(answers)
    distinct, index_of = _distinct(answers)
    relation = _relations(distinct, nli, question)
    cluster_of: list[int] = []
    heads: list[int] = []  # the distinct answer that opened each cluster
    for i, answer in enumerate(distinct):
        for cid, head in enumerate(heads):
            if same_answer_text(answer, distinct[head]) or _match(relation, i, head, strict):
                cluster_of.append(cid)
                break
        else:
            cluster_of.append(len(heads))
            heads.append(i)

    labels: list[int | None] = []
    members: list[list[int]] = [[] for _ in heads]
    for pos, answer in enumerate(answers):
        if is_idk(answer):
            labels.append(None)
            continue
        cid = cluster_of[index_of[normalize_answer(answer)]]
        labels.append(cid)
        members[cid].append(pos)
    representatives = [_representative(answers, weights, m) for m in members]
    return Clustering(labels, representatives, members)


def _distinct(answers: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """One original surface form per normalised non-IDK answer, and each form's index."""
    distinct: list[str] = []
    index_of: dict[str, int] = {}
    for answer in answers:
        if is_idk(answer):
            continue
        norm = normalize_answer(answer)
        if norm not in index_of:
            index_of[norm] = len(distinct)
            distinct.append(answer.strip())
    return distinct, index_of


def _texts(distinct: list[str], question: str) -> list[str]:
    prefix = f"{question.strip()} " if question else ""
    return [prefix + answer for answer in distinct]


def answer_texts(answers: Sequence[str], question: str = "") -> list[str]:
    """The texts cluster_answers() would hand the NLI for these answers and any others they
    are later clustered with (κ-RRSS asks sources batch by batch): to encode ahead."""
    return _texts(_distinct(answers)[0], question)


def clustering_texts(answers: Sequence[str], question: str = "") -> list[str]:
    """Every text cluster_answers() hands the NLI for these answers alone (none for fewer
    than two distinct answers: nothing to compare)."""
    texts = answer_texts(answers, question)
    return texts if len(texts) >= 2 else []


def _pairs(distinct: list[str], question: str) -> tuple[list[tuple[int, int]], list[tuple[str, str]]]:
    texts = _texts(distinct, question)
    keys = [(i, j) for i in range(len(distinct)) for j in range(len(distinct)) if i != j]
    return keys, [(texts[i], texts[j]) for i, j in keys]


def _bounded_labels(nli: NLI, pairs: Sequence[tuple[str, str]]) -> list[int | None]:
    """Per pair, its label when the NLI's similarity bounds settle it without the model
    (predict_range: the same label at the lowest and the highest similarity, hence at the true
    one, entailment only growing with it), else None."""
    predict_range = getattr(nli, "predict_range", None)
    if not callable(predict_range):
        return [None] * len(pairs)
    out: list[int | None] = []
    for low, high in predict_range(pairs):
        label = _label(low)
        out.append(label if label == _label(high) else None)
    return out


def _relations(distinct: list[str], nli: NLI | None, question: str) -> dict[tuple[int, int], int]:
    """NLI label for every ordered pair of distinct answers: those the NLI's bounds settle
    without its model, the others in one batched call."""
    if nli is None or len(distinct) < 2:
        return {}
    keys, pairs = _pairs(distinct, question)
    labels = _bounded_labels(nli, pairs)
    open_ = [i for i, label in enumerate(labels) if label is None]
    if open_:
        for i, probs in zip(open_, nli.predict([pairs[i] for i in open_]), strict=True):
            labels[i] = _label(probs)
    return {key: int(label) for key, label in zip(keys, labels, strict=True) if label is not None}


def unsettled_texts(answers: Sequence[str], nli: NLI, question: str = "") -> set[str]:
    """The texts cluster_answers() will hand the NLI's model for these answers: those of the
    answer pairs its bounds do not settle (to encode ahead, batched)."""
    distinct = _distinct(answers)[0]
    if len(distinct) < 2:
        return set()
    _, pairs = _pairs(distinct, question)
    return {t for pair, label in zip(pairs, _bounded_labels(nli, pairs), strict=True) if label is None for t in pair}


def _match(relation: dict[tuple[int, int], int], a: int, b: int, strict: bool) -> bool:
    if (a, b) not in relation:
        return False
    ab, ba = relation[(a, b)], relation[(b, a)]
    if strict:
        return ab == 0 and ba == 0
    return ab != 2 and ba != 2 and not (ab == 1 and ba == 1)


def reweighed(clustering: Clustering, answers: Sequence[str], weights: Sequence[float]) -> Clustering:
    """The same clusters with each one's representative chosen under new vote weights."""
    return Clustering(
        list(clustering.labels),
        [_representative(answers, weights, m) for m in clustering.members],
        [list(m) for m in clustering.members],
    )


def _representative(answers: Sequence[str], weights: Sequence[float], members: list[int]) -> str:
    totals: dict[str, float] = {}
    surface: dict[str, str] = {}
    for pos in members:
        norm = normalize_answer(answers[pos])
        totals[norm] = totals.get(norm, 0.0) + float(weights[pos])
        surface.setdefault(norm, answers[pos].strip())
    best = max(totals, key=lambda n: totals[n])  # max keeps the first seen on ties
    return surface[best]
