"""Astute RAG (Wang et al., 2024, Algorithm 1): the model's own knowledge against retrieval.

1. Adaptive internal passages (p_gen): the model writes at most ``m_hat`` passages from its
   memory, or "I don't know" (zero passages). Parsed strictly (astute_parsing: split on
   "Document <n>:" headers, IDK passages dropped, duplicates dropped, at most ``m_hat``, each
   bounded).
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
5. ``prompt = "compact"`` (not the paper's; for small models that do not keep its three-step
   format) replaces steps 3 and 4 with one short answer prompt over the same D0: the documents
   labelled and fenced as above, the paper's criterion (agreement across sources, consistency
   with the model's own knowledge) in one sentence, and a one-line "answer (confidence)" reply.

The confidence is the one the model gives its chosen answer (after the final tag, or on the
matching group's answer line; a number in [0, 1] or a percentage), else DEFAULT_CONFIDENCE;
like every pooled strategy it is then capped when no source behind the answer was ever
checked (pipeline.caveat_from_evidence). Evidence: every retrieved chunk, used when a chosen
group cites it (else when it contains the answer).

The prompts are in astute_prompts, the reading of the outputs in astute_parsing; each step
above is one method of the strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from core.engine.backends.generation.base import GenerationRequest
from core.engine.params import ParamSet, param
from core.engine.reliability.weights import PRIOR_ACCURACY
from core.engine.strategies.astute_parsing import (
    FinalAnswer,
    Group,
    clean_answer,
    groups_as_context,
    parse_compact,
    parse_final,
    parse_groups,
    parse_internal_passages,
    parse_proposals,
)
from core.engine.strategies.astute_prompts import (
    EXTERNAL,
    MEMORY,
    ContextDocument,
    answer_prompt,
    compact_answer_prompt,
    consolidation_prompt,
    generation_prompt,
)
from core.engine.strategies.base import Answering, AnswerStrategy, EngineContext, Evidence, Requirement, StrategyResult
from core.engine.strategies.pipeline import caveat_from_evidence
from core.engine.strategies.registry import register
from core.engine.text import IDK, bound, is_idk, normalize_answer
from core.engine.types import JSONObject, Passage

# A self-reported confidence is missing: an unscored answer is worth a coin flip, the
# accuracy the product assumes for an unchecked source.
DEFAULT_CONFIDENCE = PRIOR_ACCURACY
MAX_RAW_CHARS = 2000  # each raw model output kept in the trace
MAX_TRACE_TEXT = 300  # each document's text kept in the trace (for the ask page)
# Output budgets of the prompts (GenerationRequest.max_tokens).
GEN_TOKENS_PER_PASSAGE = 200
CONSOLIDATION_TOKENS = 500
ANSWER_TOKENS = 600
COMPACT_TOKENS = 48  # one line: a few words and a confidence
PLAIN_FALLBACK = "one more call with the plain answer prompt"


PROMPT_STYLES = ("paper", "compact")


@dataclass(frozen=True)
class AstuteRagParams(ParamSet):
    m_hat: int = param(
        1,
        low=0,
        high=5,
        help="at most this many passages the model writes from its own memory (0: none; with a small local "
        "model 0 does better: its own passages are mostly fragments, docs/benchmarks.md)",
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
    prompt: str = param(
        "paper",
        choices=PROMPT_STYLES,
        help="paper: the paper's consolidation and answer prompts (groups, an answer per group, the final answer "
        "in tags); compact: one short answer prompt over the same documents, for small models that do not keep "
        "the paper's format (t is then not used)",
    )
    plain_fallback: bool = param(
        True,
        help="when the model breaks the answer format and no fallback finds an answer, ask it once more with the "
        "plain answer prompt over the same documents instead of abstaining",
    )


def _documents(passages: Sequence[Passage], internal: Sequence[str], names: dict[int, str]) -> list[ContextDocument]:
    """D0 = E + I: retrieved passages first, then the internal ones, numbered from 1."""
    docs = [
        ContextDocument(i, p.text, (EXTERNAL,), source=names.get(p.source_id, f"source {p.source_id}"))
        for i, p in enumerate(passages, start=1)
    ]
    docs.extend(ContextDocument(len(passages) + j, text, (MEMORY,)) for j, text in enumerate(internal, start=1))
    return docs


def _matches(answer: str, other: str) -> bool:
    a, b = normalize_answer(answer), normalize_answer(other)
    return bool(a and b) and (a == b or f" {a} " in f" {b} " or f" {b} " in f" {a} ")


@dataclass
class _Consolidation:
    """What the t - 1 consolidation rounds leave: the last usable context and its groups."""

    last: list[ContextDocument] | None = None
    groups: list[Group] = field(default_factory=list)
    rounds: list[JSONObject] = field(default_factory=list)


class _RawOutputs(TypedDict):
    """Each raw model output of one answer (bounded), None where the step did not run."""

    generate: str | None
    consolidate: list[str]
    answer: str | None
    plain: str | None


@dataclass
class _Transcript:
    """What one answer tells the reader besides the answer: notes, and each raw model output
    (bounded) for the trace."""

    notes: list[str] = field(default_factory=list)
    raw: _RawOutputs = field(
        default_factory=lambda: _RawOutputs(generate=None, consolidate=[], answer=None, plain=None)
    )


def _ask(answering: Answering, prompt: str, max_tokens: int) -> str:
    """One prompt to the generator with its output budget; the text it writes."""
    generations = answering.generate([GenerationRequest(answering.question, (), prompt=prompt, max_tokens=max_tokens)])
    return generations[0].text if generations else ""


@register("astute-rag")
class AstuteRagStrategy(AnswerStrategy[AstuteRagParams]):
    description = (
        "Astute RAG: the model's own passages beside the pooled retrieved ones, source-aware consolidation, "
        "then the most reliable group's answer with the model's confidence"
    )
    requires = frozenset({Requirement.FREE_TEXT})
    product = True
    Params = AstuteRagParams

    def answer(self, question: str, ctx: EngineContext, params: AstuteRagParams) -> StrategyResult:
        answering = self.begin(question, ctx)
        transcript = _Transcript()
        internal = self.internal_passages(answering, params, transcript)
        passages = answering.pooled_passages(params.pooled_k)
        initial = _documents(passages, internal, {s.id: s.name for s in ctx.sources})
        groups: list[Group] = []
        proposals: dict[int, tuple[str, float | None]] = {}
        if params.prompt == "compact":
            consolidation = _Consolidation()
            final = self.compact_answer(answering, initial, params, transcript)
        else:
            consolidation = self.consolidate(answering, initial, params, transcript)
            output = self.finalise(answering, initial, consolidation.last, params, transcript)
            groups, _ = parse_groups(output, initial) if params.t > 0 else ([], 0)
            proposals = parse_proposals(output)
            final = self.final_answer(answering, output, proposals, initial, params, transcript)
        answer = IDK if is_idk(final.answer) else final.answer

        shown = groups or consolidation.groups  # the answer's own groups, else the last consolidation's
        confidence = self.choose_groups(answer, final.confidence, shown, proposals)
        used = self._used(answer, initial, shown)
        evidence = self.evidence(passages, used)
        result = answering.result(
            answer,
            0.0 if is_idk(answer) else float(confidence if confidence is not None else DEFAULT_CONFIDENCE),
            evidence=evidence,
            notes=transcript.notes,
        )
        if not is_idk(answer) and not any(e.used for e in evidence):
            result.notes.append("No retrieved passage supports this answer: it rests on the model's own knowledge.")
        caveat_from_evidence(result, ctx.sources)
        result.trace = {
            "astute": {
                "m_hat": params.m_hat,
                "t": params.t,
                "prompt": params.prompt,
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
                "groups_from": "answer" if groups else ("consolidation" if consolidation.groups else None),
                "consolidations": consolidation.rounds,
                "format_ok": final.tagged,
                "fallback": final.how or None,
                "answer_confidence": confidence,
                "confidence_source": "model" if confidence is not None else "default",
                "raw": transcript.raw,
            }
        }
        return result

    @staticmethod
    def internal_passages(answering: Answering, params: AstuteRagParams, transcript: _Transcript) -> list[str]:
        """Step 1 (p_gen): at most m_hat passages from the model's own memory (none for m_hat = 0)."""
        if params.m_hat <= 0:
            return []
        output = _ask(
            answering, generation_prompt(answering.question, params.m_hat), GEN_TOKENS_PER_PASSAGE * params.m_hat
        )
        transcript.raw["generate"] = bound(output, MAX_RAW_CHARS)
        return parse_internal_passages(output, params.m_hat)

    @staticmethod
    def consolidate(
        answering: Answering, initial: Sequence[ContextDocument], params: AstuteRagParams, transcript: _Transcript
    ) -> _Consolidation:
        """Step 3 (p_con), t - 1 rounds: each usable output's groups become the last context; an
        unusable one keeps the previous context (with a note)."""
        done = _Consolidation()
        for iteration in range(1, params.t):
            output = _ask(
                answering,
                consolidation_prompt(answering.question, initial, done.last, params.passage_chars),
                CONSOLIDATION_TOKENS,
            )
            transcript.raw["consolidate"].append(bound(output, MAX_RAW_CHARS))
            groups, rejected = parse_groups(output, initial)
            done.rounds.append(
                {"iteration": iteration, "groups": len(groups), "rejected": rejected, "format_ok": bool(groups)}
            )
            if groups:
                for number, group in enumerate(groups, start=1):
                    group.number = number  # as the next prompt numbers them (Group 1, 2, ...)
                done.last, done.groups = groups_as_context(groups), groups
            else:
                transcript.notes.append(
                    f"Consolidation round {iteration}: the model's output had no group in the expected format "
                    "(Group n (source: ...; documents: ...): ...); the previous context was kept."
                )
        return done

    @staticmethod
    def finalise(
        answering: Answering,
        initial: Sequence[ContextDocument],
        last: Sequence[ContextDocument] | None,
        params: AstuteRagParams,
        transcript: _Transcript,
    ) -> str:
        """Step 4 (p_ans): consolidate once more (unless t = 0), one answer per group, the final
        answer between tags; the model's output."""
        prompt = answer_prompt(answering.question, initial, last, consolidate=params.t > 0, limit=params.passage_chars)
        output = _ask(answering, prompt, ANSWER_TOKENS)
        transcript.raw["answer"] = bound(output, MAX_RAW_CHARS)
        return output

    def compact_answer(
        self, answering: Answering, initial: Sequence[ContextDocument], params: AstuteRagParams, transcript: _Transcript
    ) -> FinalAnswer:
        """The compact variant's one answer call (instead of p_con and p_ans); a reply with no
        usable answer line goes to the same plain fallback as the paper's format, with a note."""
        output = _ask(
            answering, compact_answer_prompt(answering.question, initial, limit=params.passage_chars), COMPACT_TOKENS
        )
        transcript.raw["answer"] = bound(output, MAX_RAW_CHARS)
        final = parse_compact(output)
        if final.tagged or final.how:
            return final
        if params.plain_fallback:
            final = self.plain_answer(answering, initial, params, transcript) or final
        taken = f"the answer was taken from {final.how}" if final.how else "the strategy abstained"
        transcript.notes.append(f"The model's reply to the compact prompt held no usable answer line: {taken}.")
        return final

    @staticmethod
    def plain_answer(
        answering: Answering, initial: Sequence[ContextDocument], params: AstuteRagParams, transcript: _Transcript
    ) -> FinalAnswer | None:
        """The plain answer prompt over the same documents D0 (the format fallback); None when
        it abstains too."""
        texts = [bound(d.text, params.passage_chars) for d in initial]
        generations = answering.generate([GenerationRequest(answering.question, texts)])
        plain = generations[0].text if generations else ""
        transcript.raw["plain"] = bound(plain, MAX_RAW_CHARS)
        first = next((line for line in plain.splitlines() if line.strip()), "")
        answer_text = "" if is_idk(first) else clean_answer(first)
        return FinalAnswer(answer_text, None, False, PLAIN_FALLBACK) if answer_text else None

    def final_answer(
        self,
        answering: Answering,
        output: str,
        proposals: dict[int, tuple[str, float | None]],
        initial: Sequence[ContextDocument],
        params: AstuteRagParams,
        transcript: _Transcript,
    ) -> FinalAnswer:
        """The final answer of the p_ans output, through the parsing fallbacks; when none finds
        one, the plain answer prompt over the same documents (``plain_fallback``). A final
        answer without tags is said in a note."""
        final = parse_final(output, proposals)
        if not final.tagged and not final.how and params.plain_fallback:
            final = self.plain_answer(answering, initial, params, transcript) or final
        if not final.tagged:
            taken = f"the answer was taken from {final.how}" if final.how else "the strategy abstained"
            transcript.notes.append(f"The model did not mark its final answer with <<<ANSWER>>> tags: {taken}.")
        return final

    @staticmethod
    def choose_groups(
        answer: str,
        confidence: float | None,
        groups: Sequence[Group],
        proposals: dict[int, tuple[str, float | None]],
    ) -> float | None:
        """Give each shown group its proposed answer and mark the groups behind ``answer``
        (by their answer, else by their summary); the answer's confidence: the model's own
        for the final answer, else the best of the chosen groups'."""
        for group in groups:
            if group.number in proposals:
                group.answer, group.confidence = proposals[group.number]
        if is_idk(answer):
            return confidence
        for group in groups:
            group.chosen = bool(group.answer and _matches(answer, group.answer))
        if not any(g.chosen for g in groups):
            for group in groups:
                group.chosen = _matches(answer, group.text)
        if confidence is None:
            scores = [g.confidence for g in groups if g.chosen and g.confidence is not None]
            confidence = max(scores) if scores else None
        return confidence

    @staticmethod
    def evidence(passages: Sequence[Passage], used: set[int]) -> list[Evidence]:
        """One evidence item per retrieved chunk (its first position), used when its document
        number is among ``used``."""
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
        return evidence

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
