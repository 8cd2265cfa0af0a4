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


def support_scores(
    question: str, answers: Sequence[str], passages: Sequence[Sequence[str]], nli: NLI
) -> list[tuple[float, str]]:
    """(score, declarative) per answer, each against its own passages, in one NLI call."""
    declaratives, pairs, owners = _support_pairs(question, answers, passages)
    probs = nli.predict(pairs)
    grounded = getattr(nli, "requires_answer_grounding", False)
    scores = [0.0] * len(answers)
    for (text, _), owner, (entail, _n, _c) in zip(pairs, owners, probs, strict=False):
        score = entail * answer_grounding(answers[owner], text) ** 2 if grounded else entail
        scores[owner] = max(scores[owner], score)
    return list(zip(scores, declaratives, strict=False))


def align_many(
    question: str,
    answers: Sequence[str],
    passages: Sequence[Sequence[str]],
    nli: NLI,
    tau: float = DEFAULT_TAU,
) -> list[AlignmentResult]:
    """f_align for several responses to one question (batched NLI)."""
    results = []
    for answer, (score, decl) in zip(answers, support_scores(question, answers, passages, nli), strict=False):
        if is_idk(answer):
            results.append(AlignmentResult(IDK, False, 0.0, decl))
        elif score < tau:
            results.append(AlignmentResult(IDK, True, score, decl))
        else:
            results.append(AlignmentResult(answer.strip(), False, score, decl))
    return results


def align(question: str, answer: str, passages: Sequence[str], nli: NLI, tau: float = DEFAULT_TAU) -> AlignmentResult:
    return align_many(question, [answer], [passages], nli, tau)[0]
