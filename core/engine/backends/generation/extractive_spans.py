"""The offline reader's candidate spans: its tokenizer (words with their sentence and loose
stem) and, per passage, the spans that could answer a question (dates, numbers with their
unit, capitalised names, runs of content words, lone gerunds). The reader
(:mod:`core.engine.backends.generation.extractive`) scores them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from core.engine.backends.generation.extractive_words import (
    COMPANY_SUFFIXES,
    CONNECTORS,
    DISCOURSE_VERBS,
    MONTHS,
    SCALE,
)
from core.engine.lexical import NUMBER_WORDS, STOPWORDS
from core.engine.text import normalize_answer

# A word may hold hyphens, en dashes ("2017–18"), apostrophes, dots ("F.C."), commas and "&".
_TOKEN = re.compile(r"\d+(?::\d+)+|\d+/\d+|\$?[\w][\w'’\-–.,&]*[\w%]|\$?\w%?|[^\w\s]")
_DATE = re.compile(
    rf"\b(?:(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\.?,?\s+\d{{4}}"
    rf"|(?:{MONTHS})\.?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})"
    rf"|(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?![\d:])"
    rf"|(?:1[0-9]|20)\d{{2}}s?)\b",
    re.IGNORECASE,
)
_STOP_OR_CONNECTOR = STOPWORDS | CONNECTORS
TYPE_NOUNS = re.compile(
    r"\b(?:what|which|in what|the)\s+(county|country|city|state|university"
    r"|team|river|band|company|language|province|island|party|film|album)\b"
)
_ABBREVIATION = re.compile(r"^(?:[A-Z]|[A-Z]\.[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt|vs|No)$")


@lru_cache(maxsize=1 << 16)
def loose_stem(word: str) -> str:
    """Folds inflections for matching question words ("recorded" ~ "record"). Memoised: a
    reader call stems every token of its passages, and words repeat across passages."""
    word = word.lower().replace("’", "'").replace("–", "-")  # "2017–18" is "2017-18"
    if word.endswith("'s"):
        word = word[:-2]
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    for suffix in ("ing", "ies", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    # "produce", "produces", "produced" all fold to "produc".
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


STOPWORD_STEMS = frozenset(loose_stem(w) for w in STOPWORDS)


@dataclass(slots=True)
class Token:
    text: str
    start: int
    end: int
    sentence: int
    stem: str


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    sentence = 0
    for m in _TOKEN.finditer(text):
        word = m.group(0)
        word = word.rstrip(".,") or word
        tokens.append(Token(word, m.start(), m.start() + len(word), sentence, loose_stem(word)))
        if word in {".", "!", "?"} and not (len(tokens) > 1 and _ABBREVIATION.match(tokens[-2].text)):
            sentence += 1
    return tokens


@dataclass
class Candidate:
    key: str
    surface: str
    kind: str  # "name", "number", "date", "phrase"
    start: int  # token index span in its passage
    end: int


def is_word(text: str) -> bool:
    """Letters or digits, possibly joined by hyphens, apostrophes or dots ("Miami-Dade")."""
    return bool(re.fullmatch(r"\w+(?:['’\-.&]\w+)*", text))


def _verbish(word: str) -> bool:
    """Adverbs and participles rarely are short answers; they bound phrase candidates."""
    return word in DISCOURSE_VERBS or len(word) > 4 and word.endswith(("ly", "ed", "ing"))


def _is_capital(tok: Token) -> bool:
    return tok.text[:1].isupper() or tok.text[:1].isdigit() and tok.text[:1] != "$"


class _Spans:
    """The candidate answer spans of one passage, collected kind by kind: dates, numbers with
    their unit, capitalised names, runs of content words and lone gerunds. A span made only of
    question words, or found in the question, is never a candidate."""

    def __init__(self, text: str, tokens: list[Token], q_terms: set[str], question: str) -> None:
        self.text = text
        self.tokens = tokens
        self.q_terms = q_terms
        self.q_normal = normalize_answer(question.lower())
        self.found: list[Candidate] = []
        self.in_date: set[int] = set()  # token indices inside a date

    def add(self, kind: str, start: int, end: int) -> None:
        """Keep tokens[start:end] as a candidate of ``kind``, unless it restates the question."""
        if start >= end:
            return
        span = self.tokens[start:end]
        if kind == "name" and span[-1].text.lower().endswith(("'s", "’s")) and len(span[-1].text) > 2:
            # "Broward's boundaries": the possessive is not part of the name.
            last = span[-1]
            trimmed = Token(last.text[:-2], last.start, last.end - 2, last.sentence, last.stem)
            span = [*span[:-1], trimmed]
        content = [
            t for t in span if t.text.lower() not in STOPWORDS and is_word(t.text) or any(c.isdigit() for c in t.text)
        ]
        if not content:
            return
        # A span made only of question words restates the question, it does not answer it.
        if all(t.stem in self.q_terms for t in content):
            return
        surface = self.text[span[0].start : span[-1].end]
        normal = normalize_answer(surface)
        if normal and normal in self.q_normal:
            return
        self.found.append(Candidate(normal, surface, kind, start, end))

    def dates(self) -> None:
        """Dates (a character regex), mapped back to token spans."""
        tokens = self.tokens
        for m in _DATE.finditer(self.text):
            start = next((i for i, t in enumerate(tokens) if t.end > m.start()), None)
            end = next((i for i, t in enumerate(tokens) if t.start >= m.end()), len(tokens))
            if start is not None:
                self.add("date", start, end)
                self.in_date.update(range(start, end))

    def number_at(self, i: int) -> None:
        """A number starting at token i, with a fraction, a scale and a unit after it."""
        tokens = self.tokens
        if not (any(c.isdigit() for c in tokens[i].text) or tokens[i].text.lower() in NUMBER_WORDS):
            return
        end = i + 1
        if end < len(tokens) and re.fullmatch(r"\d+/\d+", tokens[end].text):
            end += 1  # "59 1/2"
        while end < len(tokens) and tokens[end].text.lower() in SCALE:
            end += 1
        if (
            end < len(tokens)
            and tokens[end].text.isalpha()
            and tokens[end].text.islower()
            and tokens[end].text not in STOPWORDS
        ):
            end += 1  # the unit ("24 episodes", "5 hours")
        self.add("number", i, end)

    def name_at(self, i: int, q_kind: str) -> int | None:
        """A capitalised name starting at token i (and, for a place question, the name with its
        region); the token after it, or None when token i starts no name."""
        tokens = self.tokens
        tok = tokens[i]
        if not (tok.text[:1].isupper() and tok.text[:1].isalpha()):
            return None
        end = i + 1
        while end < len(tokens):
            nxt = tokens[end]
            if nxt.text[:1].isupper() or (nxt.text[:1].isdigit() and end > i):
                end += 1
            elif (
                end + 1 < len(tokens)
                and tokens[end + 1].text[:1].isupper()
                and (nxt.text == "." and _ABBREVIATION.match(tokens[end - 1].text) or nxt.text.lower() in CONNECTORS)
            ):
                end += 2
            else:
                break
        while end > i + 1 and tokens[end - 1].text in CONNECTORS:
            end -= 1  # a trailing ":" or "of"
        if end + 1 < len(tokens) and tokens[end].text == "," and tokens[end + 1].text in COMPANY_SUFFIXES:
            end += 2  # "Paramount Pictures, Inc."
            if end < len(tokens) and tokens[end].text == ".":
                end += 1
        start = i
        # Sentence-initial function words are capitalised only by position.
        while start < end and tokens[start].text.lower() in _STOP_OR_CONNECTOR:
            start += 1
        if start in self.in_date:
            return end  # "July 4" of "July 4, 1965" is a date, not a name
        self.add("name", start, end)
        # "Brooklyn, New York", "Canary Islands, Spain": a place and its region.
        if (
            q_kind == "place"
            and end + 1 < len(tokens)
            and tokens[end].text == ","
            and tokens[end + 1].text[:1].isupper()
            and tokens[end + 1].sentence == tokens[end].sentence
        ):
            stop = end + 2
            while stop < len(tokens) and tokens[stop].text[:1].isupper():
                stop += 1
            if stop - end - 1 <= 3:
                self.add("name", start, stop)
        return end

    def phrase_at(self, i: int) -> int | None:
        """A run of up to four lower-case content words (joined by "of") starting at token i;
        the token after it, or None when token i starts no phrase."""
        tokens = self.tokens
        tok = tokens[i]
        low = tok.text.lower()
        if not (tok.text.isalpha() and low not in STOPWORDS and tok.stem not in self.q_terms and not _verbish(low)):
            return None
        end = i + 1
        while end < len(tokens) and end - i < 4:
            nxt = tokens[end]
            if (
                nxt.text.isalpha()
                and nxt.text.lower() not in STOPWORDS
                and nxt.stem not in self.q_terms
                and not nxt.text[:1].isupper()
                and not _verbish(nxt.text.lower())
            ):
                end += 1
            elif (
                nxt.text.lower() == "of"
                and end + 1 < len(tokens)
                and tokens[end + 1].text.isalpha()
                and tokens[end + 1].text.lower() not in STOPWORDS
            ):
                end += 2
            else:
                break
        if not (end == i + 1 and (low in DISCOURSE_VERBS or len(low) > 4 and low.endswith(("ed", "ly")))):
            self.add("phrase", i, end)
        return end

    def gerund_at(self, i: int) -> None:
        """A lone gerund at token i: it can be an answer ("mining"); _prior discounts it."""
        tok = self.tokens[i]
        low = tok.text.lower()
        if (
            tok.text.isalpha()
            and len(low) > 5
            and low.endswith("ing")
            and low not in STOPWORDS
            and tok.stem not in self.q_terms
            and low not in DISCOURSE_VERBS
        ):
            self.add("phrase", i, i + 1)


def candidates(
    text: str, tokens: list[Token], q_terms: set[str], question: str, q_kind: str = "other"
) -> list[Candidate]:
    """Every candidate span of a passage: its dates first, then, token by token, a number
    starting there and a name, else a phrase, else a gerund (a name or a phrase is skipped
    over as a whole)."""
    spans = _Spans(text, tokens, q_terms, question)
    spans.dates()
    i = 0
    while i < len(tokens):
        spans.number_at(i)
        after = spans.name_at(i, q_kind)
        if after is None:
            after = spans.phrase_at(i)
        if after is None:
            spans.gerund_at(i)
            after = i + 1
        i = after
    return spans.found
