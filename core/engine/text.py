"""Answer normalisation and "I don't know" detection, shared by every strategy and metric.

Normalisation follows the SQuAD evaluation script so that containment accuracy here is
comparable with the numbers reported in the RA-RAG paper.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

IDK = "I don't know"

_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Curly quotes are folded to ASCII before the punctuation pass so "don’t" and "don't" agree.
_QUOTE_FOLD = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_PUNCT = set(string.punctuation)

# Normalised forms (see normalize_answer) that mean the model abstained.
_IDK_FORMS = {
    "",
    "i dont know",
    "i do not know",
    "dont know",
    "do not know",
    "i dont know answer",
    "unknown",
    "no answer",
    "none",
    "n/a",
    "na",
    "not known",
    "cannot answer",
    "i cannot answer",
    "i cant answer",
    "not enough information",
    "insufficient information",
    "no information",
    "idk",
}
_IDK_PREFIXES = ("i dont know", "i do not know", "i cannot answer", "i cant answer")


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = text.translate(_QUOTE_FOLD).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def is_idk(text: str | None) -> bool:
    """True for an empty output or any common way of saying "I don't know"."""
    if text is None:
        return True
    norm = normalize_answer(text)
    if norm in _IDK_FORMS:
        return True
    # Models often add a tail ("I don't know based on the context"); keep those as IDK too.
    return any(norm.startswith(prefix + " ") for prefix in _IDK_PREFIXES) and len(norm.split()) <= 12


def answer_contains_gold(response: str, golds: str | Iterable[str]) -> bool:
    """Containment accuracy: some normalised gold answer occurs in the normalised response."""
    if is_idk(response):
        return False
    if isinstance(golds, str):
        golds = [golds]
    norm_response = f" {normalize_answer(response)} "
    for gold in golds:
        norm_gold = normalize_answer(gold)
        if norm_gold and f" {norm_gold} " in norm_response:
            return True
    return False


def whitespace_tokens(text: str) -> int:
    """Token count used by backends that do not report one (comparable across strategies)."""
    return len(text.split())


def bound(text: str, limit: int) -> str:
    """``text`` on one line with collapsed whitespace, cut at a word within ``limit`` characters
    (" ..." marks the cut): how prompts quote untrusted text and traces keep long outputs."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + " ..."
