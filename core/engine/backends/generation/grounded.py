"""Answers held to the passages: a small model's answer that is not an answer, or that its
passages do not hold, is replaced by the extractive reader's span from the same passages.

RA-RAG's prompt asks for "only essential keywords" from the context. A 0.5B model often does
something else, and on the demo these were the reading losses (docs/benchmarks.md, issue 36):

- it repeats the question ("who is darrell brother in the walking dead" -> "Darrell"; "What
  WB supernatural drama series ..." -> "WB supernatural drama series");
- it writes a sentence from the passage instead of the answer in it ("In the early
  development of their band, The Smashing Pumpkins struggled with a name.");
- it names something its passages never mention ("Oklahoma" from passages about Oregon).

Each such answer is replaced by what the extractive reader finds in the same passages (a
span, so grounded by construction, or "I don't know"). A well-formed answer whose words are
in the passages is kept, with two exceptions, each needing at least
``SECOND_READING_PASSAGES`` passages to hold the reader's span:

- passages that are one source's (``one_source``), of which only one holds the model's
  answer: a source's answer is what most of its passages say (three passages on Usher's
  "Confessions", one ending "Justin's song gained immense fame", and the model said
  "Justin"). Pooled passages of several sources (vanilla RAG) are not held to this: there the
  majority of passages is the majority of sources, which is what misinformation wins;
- the model's own "I don't know" (the 0.5B abstained on "the league cup known as what for
  sponsorship reasons?" from three passages that each name the Carabao Cup). Passages
  retrieved for another subject seldom agree on a span, so a question nobody's passages
  answer stays unanswered.

With ``unsupported="abstain"`` the reader never speaks: neither exception applies. Requests
with a ready prompt (Astute RAG's, CrEst's) are passed through: their strategies parse the
model's text themselves.

Each Generation says which backend wrote it (``backend``), so an answer the reader gave is
never shown as the model's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest, Generator
from core.engine.backends.generation.extractive import ExtractiveReader, options_of
from core.engine.lexical import content_set
from core.engine.text import IDK, is_idk

MAX_ANSWER_WORDS = 10  # longer is a sentence, not the keywords the prompt asks for
UNHELD = "not in its passages"
YES_NO = frozenset({"yes", "no"})


ECHO_SHARE = 0.75  # an answer this much made of the question's own words repeats it


# a word this long, this alike to one of the question's and of about its length, is that word misspelt
MISSPELT_LENGTH = 6
MISSPELT_RATIO = 0.8


def _echoed(word: str, asked: set[str]) -> bool:
    """``word`` is one of the question's words, or that word misspelt in the question
    ("supernatural" for "supernatrual")."""
    if word in asked:
        return True
    return len(word) >= MISSPELT_LENGTH and any(
        len(other) >= MISSPELT_LENGTH
        and abs(len(other) - len(word)) <= 2
        and SequenceMatcher(None, word, other).ratio() >= MISSPELT_RATIO
        for other in asked
    )


def echoes_question(question: str, answer: str) -> bool:
    """Whether ``answer`` mostly repeats the question's words (an "X or Y?" question's
    alternative excepted: naming one is the answer). A share, not all of them, and a word
    misspelt in the question still counts as its own ("supernatural drama" repeats "What WB
    supernatrual drama series ...")."""
    words = content_set(answer)
    asked = content_set(question)
    if not words or sum(_echoed(word, asked) for word in words) < ECHO_SHARE * len(words):
        return False
    if re.search(r"\bor\b", question, re.IGNORECASE):
        return False  # naming an alternative of an "X or Y" question is its answer
    return not any(words <= content_set(option) for option in options_of(question))


def answer_in_sentence(question: str, sentence: str) -> str | None:
    """The answer a sentence gives once the question's own words are taken out ("The center
    of heredity in a cell is the nucleus." -> "nucleus"), when exactly one short run of other
    words is left; None otherwise (the sentence is not a restated answer)."""
    asked = content_set(question)
    tokens = re.findall(r"[\w'’.-]+", sentence)
    runs: list[list[str]] = [[]]
    for token in tokens:
        word = content_set(token)
        if word and word <= asked:
            runs.append([])
        else:
            runs[-1].append(token)

    def filler(token: str) -> bool:  # a function word ("The", "is"), not a letter named ("S")
        core = token.strip("'’\".,")
        return not content_set(token) and not (len(core) == 1 and core.isupper())

    kept = []
    for run in runs:
        while run and filler(run[0]):
            run = run[1:]
        while run and filler(run[-1]):
            run = run[:-1]
        if run:
            kept.append(" ".join(run).strip(".'’"))
    if len(kept) != 1 or len(kept[0].split()) > MAX_SPAN_WORDS:
        return None
    return kept[0]


MAX_SPAN_WORDS = 4


def in_passages(answer: str, passages: Sequence[str]) -> bool:
    """Whether one passage holds every content word of ``answer``."""
    words = content_set(answer)
    return not words or any(words <= content_set(text) for text in passages)


# A model's "I don't know" gives way to the reader's span only when this many passages hold it.
SECOND_READING_PASSAGES = 2


def held_by(answer: str, passages: Sequence[str]) -> int:
    """How many of ``passages`` hold every content word of ``answer`` (0 for no words)."""
    words = content_set(answer)
    return sum(words <= content_set(text) for text in passages) if words else 0


def is_sentence(answer: str) -> bool:
    """Longer than MAX_ANSWER_WORDS, or a full stop after SENTENCE_WORDS words or more
    ("Hamlet was written by William Shakespeare."): a sentence, not keywords."""
    count = len(re.findall(r"\S+", answer))
    return count > MAX_ANSWER_WORDS or (count >= SENTENCE_WORDS and answer.rstrip().endswith("."))


SENTENCE_WORDS = 4


_WORD = re.compile(r"\w+(?:[.'’-]\w+)*")
MAX_GAP = 1  # function words a passage may put between two of the answer's words (", and")
MAX_NAMED = 3  # words the question names that may follow the answer in its passage


def in_own_words(question: str, answer: str, passages: Sequence[str]) -> str:
    """``answer`` as its passage words it: the first run of a passage's words that gives the
    answer's words in order, with at most MAX_GAP function words between two of them ("red,
    white, blue" -> "red, white, and blue"), and the words right after it that the question
    names (the unit or kind it asks for: "3.28084" -> "3.28084 feet" for "how far is a meter
    in feet", "Nineteenth" -> "Nineteenth Amendment" for "what constitutional amendment").
    Unchanged when no passage holds its words so."""
    wanted = [w.lower() for w in _WORD.findall(answer)]
    if not wanted or len(wanted) > MAX_ANSWER_WORDS:
        return answer
    asked = content_set(question)
    for text in passages:
        tokens = list(_WORD.finditer(text))
        lowered = [t.group().lower() for t in tokens]
        for start, word in enumerate(lowered):
            if word != wanted[0]:
                continue
            end, matched = start, 1
            while matched < len(wanted):
                step = next(
                    (j for j in range(end + 1, min(end + 2 + MAX_GAP, len(lowered))) if lowered[j] == wanted[matched]),
                    None,
                )
                if step is None or any(content_set(lowered[j]) for j in range(end + 1, step)):
                    break
                end, matched = step, matched + 1
            if matched < len(wanted):
                continue
            given = content_set(" ".join(lowered[start : end + 1]))
            for _ in range(MAX_NAMED):  # "4" -> "4 Death Stars" for "how many death stars"
                named = content_set(lowered[end + 1]) if end + 1 < len(tokens) else set()
                if not named or not named <= asked or named <= given:
                    break
                end, given = end + 1, given | named
            return text[tokens[start].start() : tokens[end].end()]
    return answer


def why_replaced(question: str, answer: str, passages: Sequence[str]) -> str | None:
    """Why the model's ``answer`` is not kept (None: it is kept)."""
    if is_idk(answer) or answer.strip().strip(".!").lower() in YES_NO:
        return None  # a yes/no answer is not a span of the passages, and needs none
    if is_sentence(answer):
        return "a sentence, not an answer"
    if echoes_question(question, answer):
        return "repeats the question"
    if not in_passages(answer, passages):
        return UNHELD
    return None


class GroundedGenerator:
    """``model``'s answers, with the reader's span where the model's is not an answer
    grounded in the passages (module docstring)."""

    def __init__(self, model: Generator, reader: Generator | None = None, *, unsupported: str = "reader") -> None:
        self.model = model
        self.reader: Generator = reader or ExtractiveReader()
        # What an answer its passages do not hold becomes: the reader's span ("reader") or
        # "I don't know" ("abstain").
        self.unsupported = unsupported
        self.name = model.name
        self.capabilities: frozenset[Capability] = model.capabilities

    def __getattr__(self, name: str) -> object:
        # What the wrapped model offers besides generate (token scores, warm-up) stays reachable.
        if name in ("model", "reader"):  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.model, name)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        out = list(self.model.generate(requests))
        # Why each answer is not kept (only requests with the answer prompt and passages: without
        # passages, vanilla-llm's, there is nothing to hold the model's own knowledge to).
        reasons = {
            i: reason
            for i, (request, generation) in enumerate(zip(requests, out, strict=True))
            if request.prompt is None
            and request.passages
            and (reason := why_replaced(request.question, generation.text, request.passages))
        }
        redo = []
        for i, reason in reasons.items():
            request, model = requests[i], out[i]
            if reason == UNHELD and self.unsupported == "abstain":
                out[i] = Generation(IDK, model.backend, model.prompt_tokens, model.completion_tokens)
                continue
            answer = answer_in_sentence(request.question, model.text) if reason != UNHELD else None
            if answer and why_replaced(request.question, answer, request.passages) is None:
                out[i] = Generation(answer, model.backend, model.prompt_tokens, model.completion_tokens)
            else:
                redo.append(i)
        for i, (request, generation) in enumerate(zip(requests, out, strict=True)):
            # A kept answer in its passage's own words (in_own_words); the reader's spans are.
            if i not in redo and request.prompt is None and request.passages and not is_idk(generation.text):
                worded = in_own_words(request.question, generation.text, request.passages)
                if worded != generation.text:
                    out[i] = Generation(
                        worded, generation.backend, generation.prompt_tokens, generation.completion_tokens
                    )
        # A source's kept answer that only one of its passages holds gives way to the reader's
        # span where more of them hold that (module docstring).
        lone = [
            i
            for i, (request, generation) in enumerate(zip(requests, out, strict=True))
            if i not in redo
            and self.unsupported == "reader"
            and request.one_source
            and request.prompt is None
            and len(request.passages) >= SECOND_READING_PASSAGES
            and not is_idk(generation.text)
            and generation.text.strip().strip(".!").lower() not in YES_NO
            # an answer of no content words ("S" for "which letter") cannot be counted
            and content_set(generation.text)
            and held_by(generation.text, request.passages) < SECOND_READING_PASSAGES
        ]
        # The model's abstentions, read a second time (module docstring).
        second = [
            i
            for i, (request, generation) in enumerate(zip(requests, out, strict=True))
            if self.unsupported == "reader"
            and request.prompt is None
            and len(request.passages) >= SECOND_READING_PASSAGES
            and is_idk(generation.text)
        ]
        # One reading serves the three groups (disjoint: redo holds answers with a reason,
        # lone kept answers, second abstentions). The reader's span is held to the model's
        # rule ("supernatural" for a question about a "supernatrual drama series" is no
        # answer either); a lone answer or an abstention gives way only to a span that
        # SECOND_READING_PASSAGES of the passages hold (more than hold a lone answer).
        again = set(lone) | set(second)
        batch = redo + lone + second
        spans = self.reader.generate([requests[i] for i in batch]) if batch else []
        for i, span in zip(batch, spans, strict=True):
            model, request = out[i], requests[i]
            text = IDK if why_replaced(request.question, span.text, request.passages) else span.text
            if i in again and (is_idk(text) or held_by(text, request.passages) < SECOND_READING_PASSAGES):
                continue  # the model's answer (or its "I don't know") stands
            out[i] = Generation(
                text,
                f"{self.reader.name} (replacing {self.model.name})",
                model.prompt_tokens,
                model.completion_tokens,
            )
        return out
