"""The offline default reader: a short span from the passages, or "I don't know".

No language model is involved. The reader
1. refuses (IDK) when no passage shares enough content words with the question;
2. guesses the expected answer type from the question (who -> names, when -> dates,
   how many -> numbers, where -> places, yes/no);
3. collects candidate spans: capitalised sequences, numbers with their unit, dates, and
   runs of content words, never spans made only of question words;
4. scores each candidate by its proximity to question words (closer, same sentence) and by
   how many passages repeat it, and returns the best one.
Token counts are whitespace tokens of the prompt it stands in for, so cost metrics stay
comparable with the LLM backends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from core.engine.backends.generation.base import (
    GENERATORS,
    Capability,
    Generation,
    GenerationRequest,
    GeneratorSettings,
)
from core.engine.backends.generation.extractive_words import (
    ADJECTIVE_SUFFIXES,
    AUX_START,
    COMPANY_SUFFIXES,
    CONNECTORS,
    COPULAS,
    DEMONYM_SUFFIXES,
    DISCOURSE_VERBS,
    MONTHS,
    NEGATIONS,
    PLACE_PREPOSITIONS,
    SCALE,
    VAGUE,
)
from core.engine.backends.generation.prompts import answer_prompt
from core.engine.lexical import NUMBER_WORDS, STOPWORDS
from core.engine.text import IDK, normalize_answer, whitespace_tokens

_TOKEN = re.compile(r"\d+(?::\d+)+|\d+/\d+|\$?[\w][\w'’\-.,&]*[\w%]|\$?\w%?|[^\w\s]")
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
_TYPE_NOUNS = re.compile(
    r"\b(?:what|which|in what|the)\s+(county|country|city|state|university"
    r"|team|river|band|company|language|province|island|party|film|album)\b"
)
_ABBREVIATION = re.compile(r"^(?:[A-Z]|[A-Z]\.[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt|vs|No)$")


@lru_cache(maxsize=1 << 16)
def loose_stem(word: str) -> str:
    """Folds inflections for matching question words ("recorded" ~ "record"). Memoised: a
    reader call stems every token of its passages, and words repeat across passages."""
    word = word.lower().replace("’", "'")
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


_STOPWORD_STEMS = frozenset(loose_stem(w) for w in STOPWORDS)


@dataclass(slots=True)
class _Token:
    text: str
    start: int
    end: int
    sentence: int
    stem: str


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    sentence = 0
    for m in _TOKEN.finditer(text):
        word = m.group(0)
        word = word.rstrip(".,") or word
        tokens.append(_Token(word, m.start(), m.start() + len(word), sentence, loose_stem(word)))
        if word in {".", "!", "?"} and not (len(tokens) > 1 and _ABBREVIATION.match(tokens[-2].text)):
            sentence += 1
    return tokens


def question_type(question: str) -> str:
    q = question.lower().strip()
    words = re.findall(r"[a-z']+", q)
    first = words[0] if words else ""
    if re.search(
        r"\bhow (many|much)\b|\bnumber of\b|\bpopulation\b|\bpercentage\b|\bage of\b"
        r"|\bhow old\b|\bwhat age\b|\bhow (long|far|tall|big|large|high)\b|\btime difference\b",
        q,
    ):
        return "number"
    if re.search(
        r"\bwhen\b|\b(what|which) (year|date|decade|century|day|month)\b"
        r"|\bin what year\b|\bwhat time\b|\blast time\b",
        q,
    ):
        return "date"
    if first in AUX_START and " or " not in q or re.search(r"\btrue or false\b", q):
        return "yesno"
    if re.search(r"\bwho(m|se)?\b", q):
        return "person"
    if re.search(
        r"\bwhere\b|\bwhat (county|country|city|state|continent|province|region)\b"
        r"|\b(county|country|city|state) is\b",
        q,
    ):
        return "place"
    return "other"


@dataclass
class _Candidate:
    key: str
    surface: str
    kind: str  # "name", "number", "date", "phrase"
    start: int  # token index span in its passage
    end: int


class ExtractiveReader:
    """Answers from the passages with a short span, or "I don't know"."""

    def __init__(self, min_relevance: float = 0.5, name: str = "extractive") -> None:
        self.min_relevance = min_relevance
        self.name = name
        # A span reader: no free text, no knowledge of its own, no token scores.
        self.capabilities: frozenset[Capability] = frozenset()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        out = []
        for request in requests:
            text = self.answer(request.question, request.passages)
            prompt = request.prompt or answer_prompt(request.question, request.passages)
            out.append(Generation(text, self.name, whitespace_tokens(prompt), whitespace_tokens(text)))
        return out

    def answer(self, question: str, passages: Sequence[str]) -> str:
        q_stems = {loose_stem(w) for w in re.findall(r"[\w'’\-]+", question)} - _STOPWORD_STEMS
        q_terms = {t for t in q_stems if t and t not in STOPWORDS}
        if not q_terms or not passages:
            return IDK
        tokenized = [_tokenize(p) for p in passages]
        relevance = [self._relevance(tokens, q_terms) for tokens in tokenized]
        best = max(relevance)
        if best < self.min_relevance:
            return IDK
        kind = question_type(question)
        options = options_of(question)
        if options:
            return _pick_option(options, passages)
        if kind == "yesno":
            verdict = self._yes_no(tokenized, relevance, q_terms)
            if re.search(r"\btrue or false\b", question.lower()):
                return "true" if verdict == "yes" else "false"
            return verdict
        scores: dict[str, float] = {}
        surfaces: dict[str, dict[str, int]] = {}
        head = _head_noun(question)
        for p_index, (text, tokens) in enumerate(zip(passages, tokenized, strict=True)):
            if relevance[p_index] < max(self.min_relevance, 0.6 * best):
                continue
            per_passage: dict[str, float] = {}
            positions = _positions(tokens, q_terms)
            for cand in _candidates(text, tokens, q_terms, question, kind):
                if head and cand.key.endswith(" " + head):
                    # "Summit County" and "Summit" are one answer to "what county".
                    cand.key = cand.key[: -len(head) - 1]
                score = _proximity(tokens, cand, q_terms, positions) * _type_fit(kind, cand.kind)
                score *= _prior(tokens, cand, q_terms, kind, head)
                if score > per_passage.get(cand.key, 0.0):
                    per_passage[cand.key] = score
                surfaces.setdefault(cand.key, {})
                surfaces[cand.key][cand.surface] = surfaces[cand.key].get(cand.surface, 0) + 1
            for key, score in per_passage.items():
                # Repetition across passages adds up; each passage counts once per candidate.
                scores[key] = scores.get(key, 0.0) + score * relevance[p_index]
        if not scores:
            return IDK
        winner = max(scores, key=lambda k: scores[k])
        forms = surfaces[winner]
        return max(forms, key=lambda s: forms[s])

    @staticmethod
    def _relevance(tokens: list[_Token], q_terms: set[str]) -> float:
        present = {t.stem for t in tokens} & q_terms
        return len(present) / len(q_terms)

    @staticmethod
    def _yes_no(tokenized: list[list[_Token]], relevance: list[float], q_terms: set[str]) -> str:
        # A negation in the passages' most relevant sentences answers "no".
        votes = 0.0
        for tokens, rel in zip(tokenized, relevance, strict=True):
            negated = any(t.text.lower() in NEGATIONS or t.text.lower().endswith("n't") for t in tokens)
            votes += -rel if negated else rel
        return "yes" if votes >= 0 else "no"


def options_of(question: str) -> list[str]:
    """The two alternatives of an "X or Y?" question, if it is one."""
    m = re.search(r"(?:,|:|\bbetween)\s*([^,:?]+?)\s+or\s+([^?]+?)\s*\??$", question.strip())
    if not m:
        m = re.search(r"\b(?:is|was|who|which)\s+\w+\s+([A-Z][^?]*?)\s+or\s+([A-Z][^?]*?)\s*\??$", question.strip())
    if not m:
        return []
    first, second = m.group(1).strip(), m.group(2).strip()
    first = re.sub(r"^(the|a|an)\s+", "", first, flags=re.IGNORECASE)
    second = re.sub(r"^(the|a|an)\s+", "", second, flags=re.IGNORECASE)
    second = second.split(",")[0].strip()
    return [first, second] if first and second else []


def _pick_option(options: list[str], passages: Sequence[str]) -> str:
    """The alternative the passages talk about most (first mention breaks ties)."""
    text = " ".join(passages).lower()

    def key(option: str) -> tuple[int, int]:
        low = option.lower()
        first = text.find(low)
        return (text.count(low), -(first if first >= 0 else len(text)))

    best = max(options, key=key)
    return best if key(best)[0] > 0 else IDK


def _type_fit(question_kind: str, cand_kind: str) -> float:
    table = {
        "number": {"number": 1.0, "date": 0.3, "name": 0.1, "phrase": 0.1},
        "date": {"date": 1.0, "number": 0.4, "name": 0.1, "phrase": 0.05},
        "person": {"name": 1.0, "phrase": 0.25, "number": 0.05, "date": 0.05},
        "place": {"name": 1.0, "phrase": 0.3, "number": 0.05, "date": 0.05},
        "other": {"name": 1.0, "phrase": 0.6, "number": 0.5, "date": 0.5},
    }
    return table[question_kind][cand_kind]


def _positions(tokens: list[_Token], q_terms: set[str]) -> dict[str, list[int]]:
    """Where each question word occurs in a passage's tokens (once per passage, for _proximity)."""
    found: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens):
        if tok.stem in q_terms:
            found.setdefault(tok.stem, []).append(i)
    return found


def _proximity(tokens: list[_Token], cand: _Candidate, q_terms: set[str], positions: dict[str, list[int]]) -> float:
    """Share of question words near the candidate, each discounted by distance (``positions``:
    _positions of the same tokens)."""
    total = 0.0
    sentence = tokens[cand.start].sentence
    for term in q_terms:
        best = 0.0
        for i in positions.get(term, ()):
            if cand.start <= i < cand.end:
                best = 1.0
                break
            distance = cand.start - i if i < cand.start else i - cand.end + 1
            penalty = 12 * abs(tokens[i].sentence - sentence)
            best = max(best, 1.0 / (1.0 + (distance + penalty) / 6.0))
        total += best
    return total / len(q_terms)


def _head_noun(question: str) -> str | None:
    """The noun a "what/which X" question asks for ("what county" -> "county")."""
    m = _TYPE_NOUNS.search(question.lower())
    if m:
        return m.group(1)
    m = re.search(r"\b(?:what|which)\s+(?:kind of\s+|type of\s+)?([a-z]+)\b", question.lower())
    if m and m.group(1) not in STOPWORDS and m.group(1) not in AUX_START:
        return m.group(1)
    return None


def _prior(tokens: list[_Token], cand: _Candidate, q_terms: set[str], kind: str, head: str | None) -> float:
    """Answer-likeness of a candidate from its form and its immediate context."""
    factor = 1.0
    span = tokens[cand.start : cand.end]
    before = tokens[cand.start - 1].text.lower() if cand.start > 0 else ""
    head_stem = loose_stem(head) if head else None
    if head and head in cand.key:
        factor *= 1.5  # "what county" -> "Orange County"
    elif head_stem and any(
        t.stem == head_stem and t.sentence == span[0].sentence for t in tokens[max(0, cand.start - 5) : cand.start]
    ):
        factor *= 1.3  # "a county named Summit", "the county is Summit"
    if before in COPULAS:
        factor *= 1.2  # answers tend to follow "is", "was", "namely:"
    sentence_initial = cand.start == 0 or tokens[cand.start - 1].sentence != span[0].sentence
    if sentence_initial and len(span) == 1:
        factor *= 0.3  # a lone sentence-initial word is capitalised by position
    # Candidates that mostly repeat the question ("Kansas City Chiefs" for "who did the
    # chiefs play") are the topic, not the answer.
    content = [t for t in span if t.text.lower() not in STOPWORDS and _is_word(t.text)]
    if content:
        echoed = sum(t.stem in q_terms and t.stem != head_stem for t in content)
        factor *= 0.3 ** (echoed / len(content))
    low = span[0].text.lower()
    if cand.kind == "phrase" and len(content) == 1:
        word = content[0].text.lower()
        if word in VAGUE:
            factor *= 0.15
        elif word.endswith(ADJECTIVE_SUFFIXES):
            factor *= 0.5
        elif word.endswith("ing"):
            factor *= 0.6  # gerunds can answer ("mining") but are usually verbs
    if cand.kind == "name":
        if kind == "person":
            if len(content) >= 2 and all(t.text[:1].isupper() for t in content):
                factor *= 1.5  # "John Newton" rather than "Christmas"
            elif len(span) == 1 and span[0].text.isupper():
                factor *= 0.4  # acronyms ("TV", "NFL") are rarely people
            elif len(span) == 1:
                factor *= 0.7
        if kind == "place":
            if any(t.text == "," for t in span):
                factor *= 1.1  # "Birmingham, Alabama" over "Birmingham" from the same place
            if before in PLACE_PREPOSITIONS:
                factor *= 1.4  # "in England", "to Rome"
            if len(span) == 1 and low.endswith(DEMONYM_SUFFIXES) and not before:
                factor *= 0.5
            elif len(span) == 1 and low.endswith(DEMONYM_SUFFIXES) and before not in PLACE_PREPOSITIONS:
                nxt = tokens[cand.end].text if cand.end < len(tokens) else ""
                # "Roman mythology": an adjective before a noun, not the place.
                factor *= 0.35 if nxt.isalpha() and nxt.islower() else 0.6
    return factor


def _is_word(text: str) -> bool:
    """Letters or digits, possibly joined by hyphens, apostrophes or dots ("Miami-Dade")."""
    return bool(re.fullmatch(r"\w+(?:['’\-.&]\w+)*", text))


def _verbish(word: str) -> bool:
    """Adverbs and participles rarely are short answers; they bound phrase candidates."""
    return word in DISCOURSE_VERBS or len(word) > 4 and word.endswith(("ly", "ed", "ing"))


def _is_capital(tok: _Token) -> bool:
    return tok.text[:1].isupper() or tok.text[:1].isdigit() and tok.text[:1] != "$"


class _Spans:
    """The candidate answer spans of one passage, collected kind by kind: dates, numbers with
    their unit, capitalised names, runs of content words and lone gerunds. A span made only of
    question words, or found in the question, is never a candidate."""

    def __init__(self, text: str, tokens: list[_Token], q_terms: set[str], question: str) -> None:
        self.text = text
        self.tokens = tokens
        self.q_terms = q_terms
        self.q_normal = normalize_answer(question.lower())
        self.found: list[_Candidate] = []
        self.in_date: set[int] = set()  # token indices inside a date

    def add(self, kind: str, start: int, end: int) -> None:
        """Keep tokens[start:end] as a candidate of ``kind``, unless it restates the question."""
        if start >= end:
            return
        span = self.tokens[start:end]
        if kind == "name" and span[-1].text.lower().endswith(("'s", "’s")) and len(span[-1].text) > 2:
            # "Broward's boundaries": the possessive is not part of the name.
            last = span[-1]
            trimmed = _Token(last.text[:-2], last.start, last.end - 2, last.sentence, last.stem)
            span = [*span[:-1], trimmed]
        content = [
            t for t in span if t.text.lower() not in STOPWORDS and _is_word(t.text) or any(c.isdigit() for c in t.text)
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
        self.found.append(_Candidate(normal, surface, kind, start, end))

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


def _candidates(
    text: str, tokens: list[_Token], q_terms: set[str], question: str, q_kind: str = "other"
) -> list[_Candidate]:
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


@GENERATORS.register("extractive")
def extractive_reader(settings: GeneratorSettings) -> ExtractiveReader:
    """The offline reader needs nothing configured."""
    return ExtractiveReader()
