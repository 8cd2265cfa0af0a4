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

from core.engine.backends.generation.base import (
    GENERATORS,
    Capability,
    Generation,
    GenerationRequest,
    GeneratorSettings,
)
from core.engine.backends.generation.extractive_spans import (
    STOPWORD_STEMS,
    TYPE_NOUNS,
    Candidate,
    Token,
    candidates,
    is_word,
    loose_stem,
    tokenize,
)
from core.engine.backends.generation.extractive_words import (
    ADJECTIVE_SUFFIXES,
    AUX_START,
    COPULAS,
    DEMONYM_SUFFIXES,
    NEGATIONS,
    PLACE_PREPOSITIONS,
    VAGUE,
)
from core.engine.backends.generation.prompts import answer_prompt
from core.engine.lexical import STOPWORDS
from core.engine.text import IDK, whitespace_tokens


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
        # The question's words cut as the passages' are ("F.C.", "2017–18" are one word each).
        q_stems = {t.stem for t in tokenize(question) if t.text[0].isalnum()} - STOPWORD_STEMS
        q_terms = {t for t in q_stems if t and t not in STOPWORDS}
        if not q_terms or not passages:
            return IDK
        tokenized = [tokenize(p) for p in passages]
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
            for cand in candidates(text, tokens, q_terms, question, kind):
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
    def _relevance(tokens: list[Token], q_terms: set[str]) -> float:
        present = {t.stem for t in tokens} & q_terms
        return len(present) / len(q_terms)

    @staticmethod
    def _yes_no(tokenized: list[list[Token]], relevance: list[float], q_terms: set[str]) -> str:
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


def _positions(tokens: list[Token], q_terms: set[str]) -> dict[str, list[int]]:
    """Where each question word occurs in a passage's tokens (once per passage, for _proximity)."""
    found: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens):
        if tok.stem in q_terms:
            found.setdefault(tok.stem, []).append(i)
    return found


def _proximity(tokens: list[Token], cand: Candidate, q_terms: set[str], positions: dict[str, list[int]]) -> float:
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
    m = TYPE_NOUNS.search(question.lower())
    if m:
        return m.group(1)
    m = re.search(r"\b(?:what|which)\s+(?:kind of\s+|type of\s+)?([a-z]+)\b", question.lower())
    if m and m.group(1) not in STOPWORDS and m.group(1) not in AUX_START:
        return m.group(1)
    return None


def _capitalised_inside(tokens: list[Token], word: str) -> bool:
    """Whether ``word`` also occurs capitalised inside a sentence of the passage."""
    return word[:1].isupper() and any(
        t.text == word and i > 0 and tokens[i - 1].sentence == t.sentence for i, t in enumerate(tokens)
    )


def _prior(tokens: list[Token], cand: Candidate, q_terms: set[str], kind: str, head: str | None) -> float:
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
    if sentence_initial and len(span) == 1 and not _capitalised_inside(tokens, span[0].text):
        # A lone sentence-initial word is capitalised by position, unless the passage also
        # capitalises it inside a sentence: a name ("Paris is the capital of France. The
        # Eiffel Tower stands in Paris").
        factor *= 0.3
    # Candidates that mostly repeat the question ("Kansas City Chiefs" for "who did the
    # chiefs play") are the topic, not the answer.
    content = [t for t in span if t.text.lower() not in STOPWORDS and is_word(t.text)]
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


@GENERATORS.register("extractive")
def extractive_reader(settings: GeneratorSettings) -> ExtractiveReader:
    """The offline reader needs nothing configured."""
    return ExtractiveReader()
