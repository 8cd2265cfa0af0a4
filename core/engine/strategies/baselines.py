"""Baselines: Vanilla RAG (pooled top-10), Vanilla LLM (no retrieval), RobustRAG keywords."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from core.engine.backends.generation.base import Capability, GenerationRequest
from core.engine.lexical import content_set, content_words
from core.engine.params import NoParams, ParamSet, param
from core.engine.strategies.base import (
    Answering,
    AnswerStrategy,
    EngineContext,
    Evidence,
    Requirement,
    StrategyResult,
)
from core.engine.strategies.pipeline import caveat_from_evidence, passage_evidence
from core.engine.strategies.registry import register
from core.engine.text import IDK, is_idk, normalize_answer
from core.engine.types import Passage


@dataclass(frozen=True)
class PooledParams(ParamSet):
    pooled_k: int = param(10, low=1, high=100, help="passages retrieved from all sources together")


@dataclass(frozen=True)
class RobustRagParams(PooledParams):
    alpha: float = param(0.3, low=0.0, high=1.0, help="keep a keyword found in this share of the isolated answers")
    beta: int = param(3, low=1, high=100, help="... or in at least this many of them")


def _final(answering: Answering, answer: str, confidence: float) -> StrategyResult:
    """The result of a single answer: an abstention carries no confidence."""
    if is_idk(answer):
        return answering.result(IDK, 0.0)
    return answering.result(answer, confidence)


def _holds(passage: str, answer: str) -> bool:
    """Whether a passage holds the answer: its normalised text, or every content word of it."""
    norm = normalize_answer(answer)
    if norm and f" {norm} " in f" {normalize_answer(passage)} ":
        return True
    words = content_set(answer)
    return bool(words) and words <= content_set(passage)


def _holding(passages: list[Passage], answer: str) -> list[bool]:
    """Which pooled passages an answer rests on: those that hold it (so the caveat looks at the
    sources the answer came from, not at every source in the pool: an answer read from one
    never-estimated source is capped however many estimated sources' passages were pooled
    beside it). All of them for an abstention, or when none holds it (a free-text answer in
    words of its own: nothing says which passages it came from)."""
    if is_idk(answer):
        return [True] * len(passages)
    holding = [_holds(p.text, answer) for p in passages]
    return holding if any(holding) else [True] * len(passages)


@register("vanilla-rag")
class VanillaRag(AnswerStrategy[PooledParams]):
    description = "top-10 passages pooled over all sources, one generator call"
    Params = PooledParams

    def answer(self, question: str, ctx: EngineContext, params: PooledParams) -> StrategyResult:
        answering = self.begin(question, ctx)
        passages = answering.pooled_passages(params.pooled_k)
        generations = answering.generate([GenerationRequest(question, [p.text for p in passages])])
        result = _final(answering, generations[0].text, 1.0)
        holding = _holding(passages, result.answer)
        result.evidence = [passage_evidence([p], used)[0] for p, used in zip(passages, holding, strict=True)]
        caveat_from_evidence(result, ctx.sources)
        return result


@register("vanilla-llm")
class VanillaLlm(AnswerStrategy[NoParams]):
    description = "the language model alone, from its own knowledge (no retrieval)"
    requires = frozenset({Requirement.FREE_TEXT})
    uses_sources = False
    Params = NoParams

    def answer(self, question: str, ctx: EngineContext, params: NoParams) -> StrategyResult:
        answering = self.begin(question, ctx)
        generations = answering.generate([GenerationRequest(question, [])])
        return _final(answering, generations[0].text, 1.0)


def _phrases(answer: str, max_len: int = 3) -> set[str]:
    """Keywords and short phrases (1-3 content words) of one isolated answer."""
    words = content_words(answer)
    return {" ".join(words[i : i + n]) for n in range(1, max_len + 1) for i in range(len(words) - n + 1)}


@register("robust-rag")
class RobustRag(AnswerStrategy[RobustRagParams]):
    """RobustRAG keyword aggregation (Xiang et al., 2024).

    Answer each pooled passage in isolation, keep phrases that appear in at least
    min(beta, alpha * n) of the non-IDK answers, then answer once more with the kept
    keywords as hints. A span reader cannot use hints, so with it the kept phrase
    with most support (longest on ties) is the answer.
    """

    description = "isolate-then-aggregate keywords over the pooled top-10 passages"
    Params = RobustRagParams

    def answer(self, question: str, ctx: EngineContext, params: RobustRagParams) -> StrategyResult:
        answering = self.begin(question, ctx)
        passages = answering.pooled_passages(params.pooled_k)
        isolated = [g.text for g in answering.generate([GenerationRequest(question, [p.text]) for p in passages])]
        answers = [text for text in isolated if not is_idk(text)]
        kept = self.keywords(answers, params)
        result = self.aggregate(answering, kept, answers) if kept else _final(answering, IDK, 0.0)
        result.evidence = self.evidence(passages, isolated, {p for p, _ in kept})
        result.trace = {"keywords": [p for p, _ in kept]}
        caveat_from_evidence(result, ctx.sources)
        return result

    @staticmethod
    def keywords(answers: list[str], params: RobustRagParams) -> list[tuple[str, int]]:
        """The phrases found in at least min(beta, alpha * n) of the n isolated answers
        (at least one), with their counts."""
        threshold = min(params.beta, params.alpha * len(answers))
        counts: Counter[str] = Counter()
        for text in answers:
            counts.update(_phrases(text))
        return [(p, c) for p, c in counts.items() if c >= max(threshold, 1)]

    @staticmethod
    def evidence(passages: list[Passage], isolated: list[str], kept: set[str]) -> list[Evidence]:
        """Every pooled passage; used when its isolated answer holds a kept keyword."""
        evidence: list[Evidence] = []
        for passage, text in zip(passages, isolated, strict=True):
            used = not is_idk(text) and bool(_phrases(text) & kept)
            evidence.extend(passage_evidence([passage], used=used))
        return evidence

    @staticmethod
    def aggregate(answering: Answering, kept: list[tuple[str, int]], answers: list[str]) -> StrategyResult:
        """The answer from the kept keywords: a span reader returns the best-supported phrase
        (longest on ties) as an answer wrote it; a free-text model answers once more with the
        keywords as hints."""
        best, support = max(kept, key=lambda pc: (pc[1], len(pc[0].split())))
        confidence = support / len(answers)
        if Capability.FREE_TEXT not in answering.ctx.generator.capabilities:
            # Return the original surface form of the best phrase.
            surface = next((a for a in answers if best in " ".join(content_words(a))), best)
            return _final(answering, surface if normalize_answer(surface) else best, confidence)
        hints = ", ".join(p for p, _ in sorted(kept, key=lambda pc: -pc[1]))
        prompt = (
            "Answer the question with a few words, using these keywords gathered from "
            f"several independent passages as hints: {hints}.\n"
            'If they do not answer the question, say "I don\'t know".\n'
            f"Question: {answering.question.strip()}\nAnswer:"
        )
        final = answering.generate([GenerationRequest(answering.question, [], prompt=prompt)])
        return _final(answering, final[0].text, confidence)
