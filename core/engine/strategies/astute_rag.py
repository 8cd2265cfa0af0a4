"""Astute RAG (Wang et al., 2024, Algorithm 1): the model's own knowledge against retrieval.

1. Adaptive internal passages (p_gen): the model writes at most ``m_hat`` passages from its
   memory, or "I don't know" (zero passages). Parsed strictly: split on "Document <n>:"
   headers, IDK passages dropped, duplicates dropped, at most ``m_hat``, each bounded.
2. Source-aware context: the pooled top-``pooled_k`` retrieved passages (as vanilla-rag) then
   the internal ones (D0 = E + I), numbered, marked "external" (with the source's name) or
   "memory", quoted as untrusted data.
3. ``t - 1`` consolidations (p_con): each output is parsed into groups ("Group <n> (source:
   ...; documents: ...): summary") that become the last context; a group must cite at least
   one valid document number, and an output with no valid group keeps the previous context
   (with a note).
4. Answer finalisation (p_ans, which also consolidates: with t = 1 it is the only call after
   p_gen, as the paper allows): groups, one answer per group with a confidence, and the final
   answer between ``<<<ANSWER>>>`` tags (``<ANSWER>`` accepted). Without tags the strategy falls
   back (an unclosed tag, a "Final answer:" line, the most confident group answer, a short
   one-line reply) and says so in a note. When none of these finds an answer, the model is
   asked once more with the plain answer prompt over the same documents D0 (``plain_fallback``,
   on by default: small models rarely keep the format, and abstaining on every broken output
   threw their answers away), else the strategy abstains. ``t = 0`` skips consolidation:
   p_ans only compares the documents and answers.

The confidence is the one the model gives its chosen answer (after the final tag, or on the
matching group's answer line; a number in [0, 1] or a percentage), else DEFAULT_CONFIDENCE;
like every pooled strategy it is then capped when no source behind the answer was ever
checked (pipeline.caveat_from_evidence). Evidence: every retrieved chunk, used when a chosen
group cites it (else when it contains the answer).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.backends.generation.base import Generation, GenerationRequest
from core.engine.params import ParamSet, param
from core.engine.reliability.weights import PRIOR_ACCURACY
from core.engine.strategies.astute_prompts import (
    EXTERNAL,
    MEMORY,
    ContextDocument,
    answer_prompt,
    bound,
    consolidation_prompt,
    generation_prompt,
)
from core.engine.strategies.base import AnswerStrategy, EngineContext, Evidence, Requirement, StrategyResult
from core.engine.strategies.pipeline import caveat_from_evidence, record
from core.engine.strategies.registry import register
from core.engine.text import IDK, is_idk, normalize_answer
from core.engine.types import CallStats, Passage

# A self-reported confidence is missing: an unscored answer is worth a coin flip, the
# accuracy the product assumes for an unchecked source.
DEFAULT_CONFIDENCE = PRIOR_ACCURACY
MAX_INTERNAL_CHARS = 1000  # an internal passage is cut here
MAX_GROUP_CHARS = 800  # a consolidated group's summary is cut here
MAX_ANSWER_CHARS = 300
MAX_RAW_CHARS = 2000  # each raw model output kept in the trace
MAX_TRACE_TEXT = 300  # each document's text kept in the trace (for the ask page)
SHORT_REPLY_WORDS = 12  # an untagged one-line reply this short is taken as the answer
# Output budgets, passed to backends whose GenerationRequest takes ``max_tokens``.
GEN_TOKENS_PER_PASSAGE = 200
CONSOLIDATION_TOKENS = 500
ANSWER_TOKENS = 600

_REQUEST_FIELDS = {f.name for f in dataclasses.fields(GenerationRequest)}


@dataclass(frozen=True)
class AstuteRagParams(ParamSet):
    m_hat: int = param(
        1, low=0, high=5, help="at most this many passages the model writes from its own memory (0: none)"
    )
    t: int = param(
        1,
        low=0,
        high=3,
        help="consolidation rounds: 1 consolidates and answers in one call, t > 1 adds t - 1 consolidation calls, "
        "0 answers without consolidating",
    )
    pooled_k: int = param(10, low=1, high=20, help="passages retrieved from all sources together (as vanilla-rag)")
    passage_chars: int = param(
        1000, low=100, high=4000, help="each document is cut to this many characters in the prompts"
    )
    plain_fallback: bool = param(
        True,
        help="when the model breaks the answer format and no fallback finds an answer, ask it once more with the "
        "plain answer prompt over the same documents instead of abstaining",
    )


# --- parsing -------------------------------------------------------------------------------

_PREFIX = r"^\s*(?:[-*#>]+\s*)?(?:\*\*)?\s*"
_GROUP = re.compile(
    _PREFIX + r"(?:new\s+|consolidated\s+)?(?:group|document)\s*(?P<n>\d+)\s*(?:\*\*)?\s*"
    r"\(\s*sources?\s*:\s*(?P<origins>[^;)]*?)\s*;\s*(?:original\s+)?(?:document|doc)s?\s*(?:numbers?)?\s*:?\s*"
    r"(?P<docs>[^)]*?)\s*\)\s*(?:\*\*)?\s*:?\s*(?P<text>.*)$",
    re.IGNORECASE,
)
_PROPOSAL = re.compile(
    _PREFIX + r"(?:proposed\s+)?answer\s+(?:for|of|to)\s+group\s*(?P<n>\d+)\s*(?:\*\*)?\s*:\s*(?P<answer>.*)$",
    re.IGNORECASE,
)
_STRUCTURE = re.compile(_PREFIX + r"(?:step\s*\d|answer\s+(?:for|of|to)\s+group|final\s+answer)", re.IGNORECASE)
_CONFIDENCE = re.compile(r"\(?\s*confidence(?:\s+score)?\s*[:=]?\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<pct>%)?\s*\)?", re.I)
_TAGGED = re.compile(r"<{1,3}\s*answer\s*>{1,3}(?P<body>.*?)<{1,3}\s*/\s*answer\s*>{1,3}", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"<{1,3}\s*answer\s*>{1,3}(?P<body>[^\n<]*)", re.IGNORECASE)
_FINAL_LINE = re.compile(
    _PREFIX + r"final\s+answer\s*(?:\*\*)?\s*[:\-]\s*(?P<answer>.+)$", re.IGNORECASE | re.MULTILINE
)
_DOC_HEADER = re.compile(r"^\s*(?:\*\*)?\s*document\s*\d+\s*(?:\*\*)?\s*:\s*", re.IGNORECASE | re.MULTILINE)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|to)\s*(\d+)")
_PLACEHOLDERS = {"your answer", "answer", "short answer", "exact answer"}
_MEMORY_WORDS = ("memory", "memorized", "internal", "own knowledge")
_EXTERNAL_WORDS = ("external", "retriev", "web")


def parse_confidence(text: str) -> float | None:
    """A confidence written as a number in [0, 1] or a percentage ("0.8", "80%"; a bare number
    in (1, 100] is read as a percentage); None when there is none or it is out of range."""
    match = _CONFIDENCE.search(text)
    if not match:
        return None
    value = float(match.group("value"))
    if match.group("pct") or value > 1.0:
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None


def clean_answer(text: str) -> str:
    """An answer without markup, surrounding quotes, a trailing period or a confidence remark."""
    text = _CONFIDENCE.sub(" ", text)
    text = " ".join(text.replace("*", " ").split()).strip(" \"'`:;,.")
    if normalize_answer(text) in _PLACEHOLDERS:
        return ""
    return bound(text, MAX_ANSWER_CHARS) if text else ""


def parse_internal_passages(output: str, m_hat: int) -> list[str]:
    """The passages of a p_gen output: split on "Document <n>:" headers (the whole output is one
    passage without them), "I don't know" passages and duplicates dropped, at most ``m_hat``."""
    if m_hat <= 0:
        return []
    parts = [p for p in _DOC_HEADER.split(output) if p.strip()]
    passages: list[str] = []
    seen: set[str] = set()
    for part in parts:
        text = bound(part, MAX_INTERNAL_CHARS)
        norm = normalize_answer(text)
        if not norm or is_idk(text) or norm.startswith(("i dont know", "i do not know")) or norm in seen:
            continue
        seen.add(norm)
        passages.append(text)
    return passages[:m_hat]


def _origins(claimed: str) -> list[str]:
    low = claimed.lower()
    out = []
    if "both" in low or any(w in low for w in _MEMORY_WORDS):
        out.append(MEMORY)
    if "both" in low or any(w in low for w in _EXTERNAL_WORDS):
        out.append(EXTERNAL)
    return out


def _cited(docs: str, count: int) -> tuple[list[int], int]:
    """The valid document numbers (1..count) a group cites, and how many it cited out of range."""
    numbers: list[int] = []
    for a, b in _RANGE.findall(docs):
        lo, hi = int(a), int(b)
        if lo <= hi and hi - lo <= count:
            numbers.extend(range(lo, hi + 1))
    numbers.extend(int(n) for n in re.findall(r"\d+", _RANGE.sub(" ", docs)))
    valid = sorted({n for n in numbers if 1 <= n <= count})
    return valid, len({n for n in numbers if not 1 <= n <= count})


@dataclass
class Group:
    """One consolidated group: the documents it cites (initial numbering) and their origins."""

    number: int
    documents: list[int]
    memory: bool
    external: bool
    claimed: list[str]  # the origins the model wrote (the flags above come from the citations)
    text: str
    answer: str | None = None
    confidence: float | None = None
    chosen: bool = False

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def parse_groups(output: str, initial: Sequence[ContextDocument]) -> tuple[list[Group], int]:
    """The groups of a p_con / p_ans output and how many header lines were rejected (no valid
    document number). A summary runs from its header to the next header, blank or step line."""
    origin_of = {d.number: d.origins for d in initial}
    groups: list[Group] = []
    rejected = 0
    current: Group | None = None
    for line in output.splitlines():
        match = _GROUP.match(line)
        if match:
            current = None
            docs, _ = _cited(match.group("docs"), len(initial))
            if not docs:
                rejected += 1
                continue
            origins = {o for n in docs for o in origin_of[n]}
            current = Group(
                number=int(match.group("n")),
                documents=docs,
                memory=MEMORY in origins,
                external=EXTERNAL in origins,
                claimed=_origins(match.group("origins")),
                text=match.group("text").strip(),
            )
            groups.append(current)
        elif current is not None and line.strip() and not _STRUCTURE.match(line) and not _TAGGED.search(line):
            current.text = f"{current.text} {line.strip()}"
        else:
            current = None
    for group in groups:
        group.text = bound(group.text, MAX_GROUP_CHARS)
    return [g for g in groups if g.text], rejected


def parse_proposals(output: str) -> dict[int, tuple[str, float | None]]:
    """Step 2's "Answer for group <n>: <answer> (confidence: <c>)" lines, by group number."""
    out: dict[int, tuple[str, float | None]] = {}
    for line in output.splitlines():
        match = _PROPOSAL.match(line)
        if match:
            body = match.group("answer")
            out[int(match.group("n"))] = (clean_answer(body), parse_confidence(body))
    return out


@dataclass
class FinalAnswer:
    answer: str
    confidence: float | None
    tagged: bool  # the answer sat between well-formed tags
    how: str  # where a fallback took it from ("" when tagged)


def _matches(answer: str, other: str) -> bool:
    a, b = normalize_answer(answer), normalize_answer(other)
    return bool(a and b) and (a == b or f" {a} " in f" {b} " or f" {b} " in f" {a} ")


def parse_final(output: str, proposals: dict[int, tuple[str, float | None]]) -> FinalAnswer:
    """The final answer of a p_ans output and the confidence the model gave it."""
    tagged = [m for m in _TAGGED.finditer(output) if clean_answer(m.group("body"))]
    if tagged:
        last = tagged[-1]
        answer = clean_answer(last.group("body"))
        confidence = parse_confidence(last.group("body"))
        if confidence is None:
            confidence = parse_confidence(output[last.end() : last.end() + 120])
        return FinalAnswer(answer, confidence, True, "")
    answer, how, confidence = "", "", None
    opened = [m for m in _OPEN_TAG.finditer(output) if clean_answer(m.group("body"))]
    final_lines = list(_FINAL_LINE.finditer(output))
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    scored = [(a, c) for a, c in proposals.values() if a and c is not None]
    if opened:
        body = opened[-1].group("body")
        answer, how, confidence = clean_answer(body), "an unclosed answer tag", parse_confidence(body)
    elif final_lines:
        body = final_lines[-1].group("answer")
        answer, how, confidence = clean_answer(body), 'a "Final answer:" line', parse_confidence(body)
    elif scored:
        answer, confidence = max(scored, key=lambda ac: ac[1] or 0.0)
        how = "the group answer it gave most confidence"
    elif len(lines) == 1 and len(lines[0].split()) <= SHORT_REPLY_WORDS and not _GROUP.match(lines[0]):
        answer, how = clean_answer(lines[0]), "its one-line reply"
    return FinalAnswer(answer or IDK, confidence if answer else None, False, how if answer else "")


# --- the strategy --------------------------------------------------------------------------


def _request(question: str, prompt: str, max_tokens: int) -> GenerationRequest:
    """A prompt request; the output budget travels when the request type has room for it."""
    extra: dict[str, Any] = {"max_tokens": max_tokens} if "max_tokens" in _REQUEST_FIELDS else {}
    return GenerationRequest(question, (), prompt=prompt, **extra)


def _documents(passages: Sequence[Passage], internal: Sequence[str], names: dict[int, str]) -> list[ContextDocument]:
    """D0 = E + I: retrieved passages first, then the internal ones, numbered from 1."""
    docs = [
        ContextDocument(i, p.text, (EXTERNAL,), source=names.get(p.source_id, f"source {p.source_id}"))
        for i, p in enumerate(passages, start=1)
    ]
    docs.extend(ContextDocument(len(passages) + j, text, (MEMORY,)) for j, text in enumerate(internal, start=1))
    return docs


def _as_context(groups: Sequence[Group]) -> list[ContextDocument]:
    return [
        ContextDocument(
            i,
            g.text,
            tuple(o for o, on in ((MEMORY, g.memory), (EXTERNAL, g.external)) if on),
            cites=tuple(g.documents),
        )
        for i, g in enumerate(groups, start=1)
    ]


@register("astute-rag")
class AstuteRagStrategy(AnswerStrategy):
    description = (
        "Astute RAG: the model's own passages beside the pooled retrieved ones, source-aware consolidation, "
        "then the most reliable group's answer with the model's confidence"
    )
    requires = frozenset({Requirement.FREE_TEXT})
    product = True
    Params = AstuteRagParams

    def answer(self, question: str, ctx: EngineContext, params: AstuteRagParams) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        notes: list[str] = []
        raw: dict[str, Any] = {"generate": None, "consolidate": [], "answer": None, "plain": None}

        def ask(prompt: str, max_tokens: int) -> str:
            generations: list[Generation] = ctx.generator.generate([_request(question, prompt, max_tokens)])
            record(stats, generations)
            return generations[0].text if generations else ""

        # 1. Adaptive internal passages.
        internal: list[str] = []
        if params.m_hat > 0:
            output = ask(generation_prompt(question, params.m_hat), GEN_TOKENS_PER_PASSAGE * params.m_hat)
            raw["generate"] = bound(output, MAX_RAW_CHARS)
            internal = parse_internal_passages(output, params.m_hat)

        # 2. The source-aware initial context D0.
        vector = ctx.embedder.encode([question])[0]
        passages = ctx.retriever.top_k_pooled(vector, params.pooled_k)
        names = {s.id: s.name for s in ctx.sources}
        initial = _documents(passages, internal, names)

        # 3. t - 1 consolidations; an unusable output keeps the previous context.
        last: list[ContextDocument] | None = None
        last_groups: list[Group] = []
        rounds: list[dict[str, Any]] = []
        for iteration in range(1, params.t):
            output = ask(consolidation_prompt(question, initial, last, params.passage_chars), CONSOLIDATION_TOKENS)
            raw["consolidate"].append(bound(output, MAX_RAW_CHARS))
            groups, rejected = parse_groups(output, initial)
            rounds.append(
                {"iteration": iteration, "groups": len(groups), "rejected": rejected, "format_ok": bool(groups)}
            )
            if groups:
                for number, group in enumerate(groups, start=1):
                    group.number = number  # as the next prompt numbers them (Group 1, 2, ...)
                last, last_groups = _as_context(groups), groups
            else:
                notes.append(
                    f"Consolidation round {iteration}: the model's output had no group in the expected format "
                    "(Group n (source: ...; documents: ...): ...); the previous context was kept."
                )

        # 4. Consolidate (unless t = 0) and finalise the answer.
        output = ask(
            answer_prompt(question, initial, last, consolidate=params.t > 0, limit=params.passage_chars),
            ANSWER_TOKENS,
        )
        raw["answer"] = bound(output, MAX_RAW_CHARS)
        groups, _ = parse_groups(output, initial) if params.t > 0 else ([], 0)
        proposals = parse_proposals(output)
        final = parse_final(output, proposals)
        if not final.tagged and not final.how and params.plain_fallback:
            texts = [bound(d.text, params.passage_chars) for d in initial]
            generations = ctx.generator.generate([GenerationRequest(question, texts)])
            record(stats, generations)
            plain = generations[0].text if generations else ""
            raw["plain"] = bound(plain, MAX_RAW_CHARS)
            first = next((line for line in plain.splitlines() if line.strip()), "")
            answer_text = "" if is_idk(first) else clean_answer(first)
            if answer_text:
                final = FinalAnswer(answer_text, None, False, "one more call with the plain answer prompt")
        if not final.tagged:
            taken = f"the answer was taken from {final.how}" if final.how else "the strategy abstained"
            notes.append(f"The model did not mark its final answer with <<<ANSWER>>> tags: {taken}.")
        answer = IDK if is_idk(final.answer) else final.answer

        shown = groups or last_groups  # the answer's own groups, else the last consolidation's
        for group in shown:
            if group.number in proposals:
                group.answer, group.confidence = proposals[group.number]
        confidence = final.confidence
        if not is_idk(answer):
            for group in shown:
                group.chosen = bool(group.answer and _matches(answer, group.answer))
            if not any(g.chosen for g in shown):
                for group in shown:
                    group.chosen = _matches(answer, group.text)
            if confidence is None:
                scores = [g.confidence for g in shown if g.chosen and g.confidence is not None]
                confidence = max(scores) if scores else None
        confidence_source = "model" if confidence is not None else "default"
        model_confidence = confidence

        used = self._used(answer, initial, shown)
        evidence: list[Evidence] = []
        for i, p in enumerate(passages, start=1):
            if any(e.chunk_id == p.chunk_id for e in evidence):
                continue  # one evidence item per chunk
            evidence.append(
                Evidence(
                    chunk_id=p.chunk_id,
                    source_id=p.source_id,
                    document_id=p.document_id,
                    distance=float(p.distance),
                    used=i in used,
                )
            )
        result = StrategyResult(
            answer=answer,
            confidence=0.0 if is_idk(answer) else float(confidence if confidence is not None else DEFAULT_CONFIDENCE),
            strategy=self.name,
            backend=ctx.generator.name,
            evidence=evidence,
            notes=notes,
            stats=stats,
        )
        if not is_idk(answer) and not any(e.used for e in evidence):
            result.notes.append("No retrieved passage supports this answer: it rests on the model's own knowledge.")
        caveat_from_evidence(result, ctx.sources)
        result.trace = {
            "astute": {
                "m_hat": params.m_hat,
                "t": params.t,
                "internal_passages": internal,
                "documents": [
                    {
                        "number": d.number,
                        "origin": d.origins[0],
                        "source": d.source,
                        "source_id": passages[d.number - 1].source_id if d.number <= len(passages) else None,
                        "chunk_id": passages[d.number - 1].chunk_id if d.number <= len(passages) else None,
                        "text": bound(d.text, MAX_TRACE_TEXT),
                        "used": d.number in used,
                    }
                    for d in initial
                ],
                "groups": [g.as_json() for g in shown],
                "groups_from": "answer" if groups else ("consolidation" if last_groups else None),
                "consolidations": rounds,
                "format_ok": final.tagged,
                "fallback": final.how or None,
                "answer_confidence": model_confidence,
                "confidence_source": confidence_source,
                "raw": raw,
            }
        }
        result.seconds = time.perf_counter() - started
        return result

    @staticmethod
    def _used(answer: str, initial: Sequence[ContextDocument], groups: Sequence[Group]) -> set[int]:
        """The numbers of the documents the answer rests on: those the chosen groups cite, else
        those that contain the answer; none for an abstention."""
        if is_idk(answer):
            return set()
        cited = {n for g in groups if g.chosen for n in g.documents}
        if cited:
            return cited
        return {d.number for d in initial if _matches(answer, d.text)}
