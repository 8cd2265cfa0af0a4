"""f_align, the misalignment filter (RA-RAG Appendix B).

The (question, answer) pair is rewritten as a declarative sentence, and its support by the
retrieved passages is scored with an NLI model (max over passages of the entailment
probability). Below tau the response becomes "I don't know", so a source whose passages do
not back the answer does not vote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.backends.nli import NLI
from core.engine.lexical import content_words
from core.engine.text import IDK, is_idk

DEFAULT_TAU = 0.1


@dataclass(frozen=True)
class AlignmentResult:
    response: str  # the answer, or IDK when filtered
    filtered: bool  # True when a non-IDK answer was turned into IDK
    score: float
    declarative: str
    exact: bool = True  # False: ``score`` is a lower bound that decided it (align_many's lazy mode)


_AUX = r"(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would|should)"


def declarative_form(question: str, answer: str) -> str:
    """Rule-based rewrite of a question and its short answer into one statement.

    "who is the CEO of X" + "Y" -> "Y is the CEO of X"; "when did X happen" + "1990" ->
    "X happen in 1990"; otherwise the plain "question answer" fallback.
    """
    q = question.strip().rstrip("?").strip()
    a = answer.strip().rstrip(".").strip()
    lower = q.lower()
    m = re.match(rf"^(who|what|which)\s+({_AUX})\s+(.+)$", lower)
    if m:
        return f"{a} {m.group(2)} {q[m.end(2) :].strip()}."
    m = re.match(r"^(who|what)\s+(\w+)\s+(.+)$", lower)
    if m and m.group(2) not in {"kind", "type", "year", "is", "are"}:
        return f"{a} {q[len(m.group(1)) :].strip()}."
    m = re.match(rf"^when\s+{_AUX}\s+(.+)$", lower)
    if m:
        return f"{q[m.start(1) :]} in {a}."
    m = re.match(rf"^where\s+{_AUX}\s+(.+)$", lower)
    if m:
        return f"{q[m.start(1) :]} in {a}."
    m = re.match(r"^how (many|much)\s+(.+)$", lower)
    if m:
        return f"{q[m.start(2) :]}: {a}."
    return f"{q} {a}."


def answer_grounding(answer: str, passage: str) -> float:
    """Share of the answer's content words that occur in the passage."""
    wanted = set(content_words(answer))
    if not wanted:
        return 1.0
    return len(wanted & set(content_words(passage))) / len(wanted)


def _support_pairs(
    question: str, answers: Sequence[str], passages: Sequence[Sequence[str]]
) -> tuple[list[str], list[tuple[str, str]], list[int]]:
    """Declaratives, the (passage, declarative) pairs to score and the answer owning each."""
    declaratives = [declarative_form(question, a) for a in answers]
    pairs: list[tuple[str, str]] = []
    owners: list[int] = []
    for i, (decl, texts) in enumerate(zip(declaratives, passages, strict=False)):
        if is_idk(answers[i]):
            continue
        for text in texts:
            pairs.append((text, decl))
            owners.append(i)
    return declaratives, pairs, owners


def support_texts(question: str, answers: Sequence[str], passages: Sequence[Sequence[str]]) -> set[str]:
    """Every text support_scores() hands the NLI for these answers (to encode ahead, batched)."""
    _, pairs, _ = _support_pairs(question, answers, passages)
    return {text for pair in pairs for text in pair}


def _scores(
    answers: Sequence[str], pairs: Sequence[tuple[str, str]], owners: Sequence[int], entail: Sequence[float], nli: NLI
) -> list[float]:
    """Per answer, the best over its passages of the entailment (times the answer's grounding
    in the passage squared, for an NLI that requires it)."""
    grounded = getattr(nli, "requires_answer_grounding", False)
    scores = [0.0] * len(answers)
    for (text, _), owner, e in zip(pairs, owners, entail, strict=False):
        score = e * answer_grounding(answers[owner], text) ** 2 if grounded else e
        scores[owner] = max(scores[owner], score)
    return scores


def support_scores(
    question: str, answers: Sequence[str], passages: Sequence[Sequence[str]], nli: NLI
) -> list[tuple[float, str]]:
    """(score, declarative) per answer, each against its own passages, in one NLI call."""
    declaratives, pairs, owners = _support_pairs(question, answers, passages)
    scores = _scores(answers, pairs, owners, [p[0] for p in nli.predict(pairs)], nli)
    return list(zip(scores, declaratives, strict=False))


def _result(answer: str, score: float, decl: str, tau: float, exact: bool = True) -> AlignmentResult:
    if is_idk(answer):
        return AlignmentResult(IDK, False, 0.0, decl)
    if score < tau:
        return AlignmentResult(IDK, True, score, decl, exact)
    return AlignmentResult(answer.strip(), False, score, decl, exact)


def align_many(
    question: str,
    answers: Sequence[str],
    passages: Sequence[Sequence[str]],
    nli: NLI,
    tau: float = DEFAULT_TAU,
    *,
    lazy: bool = False,
) -> list[AlignmentResult]:
    """f_align for several responses to one question (batched NLI).

    ``lazy``, with an NLI that can bound its entailment without its model (predict_range):
    an answer whose score is at least tau at the lowest similarity, or under tau at the
    highest, is decided without a model call, with ``exact=False`` and its lowest score (the
    caller settles the exact scores later, in one batch: pipeline.settle_scores); only the
    undecided ones are scored exactly now. The decisions are those of the exact scores."""
    predict_range = getattr(nli, "predict_range", None)
    if not lazy or not callable(predict_range):
        scored = support_scores(question, answers, passages, nli)
        return [_result(a, score, decl, tau) for a, (score, decl) in zip(answers, scored, strict=False)]
    declaratives, pairs, owners = _support_pairs(question, answers, passages)
    ranges = predict_range(pairs)
    low = _scores(answers, pairs, owners, [lo[0] for lo, _ in ranges], nli)
    high = _scores(answers, pairs, owners, [hi[0] for _, hi in ranges], nli)
    undecided = [i for i, a in enumerate(answers) if not is_idk(a) and low[i] < tau <= high[i]]
    exact: dict[int, float] = {}
    if undecided:
        scored = support_scores(question, [answers[i] for i in undecided], [passages[i] for i in undecided], nli)
        exact = {i: score for i, (score, _) in zip(undecided, scored, strict=True)}
    return [
        _result(a, exact.get(i, low[i]), declaratives[i], tau, exact=i in exact or low[i] == high[i])
        for i, a in enumerate(answers)
    ]


def align(question: str, answer: str, passages: Sequence[str], nli: NLI, tau: float = DEFAULT_TAU) -> AlignmentResult:
    return align_many(question, [answer], [passages], nli, tau)[0]
