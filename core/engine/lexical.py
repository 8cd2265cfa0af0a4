"""Small lexical helpers: content words, light stemming, number spotting.

Used by the offline NLI, the alignment filter and the extractive reader, so they agree on
what counts as "the same word".
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.engine.text import normalize_answer

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "it",
        "its",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "as",
        "into",
        "onto",
        "about",
        "over",
        "under",
        "than",
        "then",
        "so",
        "such",
        "not",
        "no",
        "nor",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "our",
        "their",
        "one",
        "ones",
        "also",
        "just",
        "only",
        "very",
        "more",
        "most",
        "some",
        "any",
        "all",
        "each",
        "every",
        "both",
        "either",
        "neither",
        "other",
        "another",
        "same",
        "s",
        "t",
        "d",
        "ll",
        "re",
        "ve",
        "m",
        "o",
        "y",
        "if",
        "while",
        "during",
        "after",
        "before",
        "between",
        "through",
        "up",
        "down",
        "out",
        "off",
        "again",
        "further",
        "once",
        "many",
        "much",
        "long",
    ]
)

NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "thirteen": "13",
    "fourteen": "14",
    "fifteen": "15",
    "sixteen": "16",
    "seventeen": "17",
    "eighteen": "18",
    "nineteen": "19",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "hundred": "100",
    "thousand": "1000",
}

_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Crude plural folding: enough to match "barons" with "baron", "episodes" with "episode".
    Memoised: the offline NLI stems every word of every passage it compares."""
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    word = word.replace(",", "")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-cased word tokens (apostrophes dropped, decimals kept together)."""
    return _WORD.findall(text.lower().replace("\u2019", "").replace("'", ""))


def content_words(text: str) -> list[str]:
    """Stemmed tokens without stopwords, in order."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def content_set(text: str) -> set[str]:
    return set(content_words(text))


def is_number(token: str) -> bool:
    return _NUMBER.fullmatch(token) is not None


def numbers(text: str) -> set[str]:
    return {t for t in content_words(text) if is_number(t)}


def same_answer_text(a: str, b: str) -> bool:
    """Exact normalised equality, or one normalised form containing the other as words."""
    na, nb = normalize_answer(a), normalize_answer(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    short, long_ = (na, nb) if len(na) <= len(nb) else (nb, na)
    return f" {short} " in f" {long_} "
