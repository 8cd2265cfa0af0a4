"""Baselines: Vanilla RAG (pooled top-10), Vanilla LLM (no retrieval), RobustRAG keywords."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from core.engine.backends.generation.base import Capability, GenerationRequest
from core.engine.lexical import content_words
from core.engine.params import NoParams, ParamSet, param
from core.engine.strategies.base import AnswerStrategy, EngineContext, Evidence, Requirement, StrategyResult
from core.engine.strategies.pipeline import caveat_from_evidence, passage_evidence, record
from core.engine.strategies.registry import register
from core.engine.text import IDK, is_idk, normalize_answer
from core.engine.types import CallStats


@dataclass(frozen=True)
class PooledParams(ParamSet):
    pooled_k: int = param(10, low=1, high=100, help="passages retrieved from all sources together")


@dataclass(frozen=True)
class RobustRagParams(PooledParams):
    alpha: float = param(0.3, low=0.0, high=1.0, help="keep a keyword found in this share of the isolated answers")
    beta: int = param(3, low=1, high=100, help="... or in at least this many of them")


def _result(
    name: str, ctx: EngineContext, answer: str, stats: CallStats, started: float, conf: float
) -> StrategyResult:
    return StrategyResult(
        answer=answer if not is_idk(answer) else IDK,
        confidence=conf if not is_idk(answer) else 0.0,
        strategy=name,
        backend=ctx.generator.name,
        stats=stats,
        seconds=time.perf_counter() - started,
    )


@register("vanilla-rag")
class VanillaRag(AnswerStrategy):
    description = "top-10 passages pooled over all sources, one generator call"
    Params = PooledParams

    def answer(self, question: str, ctx: EngineContext, params: PooledParams) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        vector = ctx.embedder.encode([question])[0]
        passages = ctx.retriever.top_k_pooled(vector, params.pooled_k)
        generations = ctx.generator.generate([GenerationRequest(question, [p.text for p in passages])])
        record(stats, generations)
        result = _result(self.name, ctx, generations[0].text, stats, started, 1.0)
        result.evidence = passage_evidence(passages, used=True)
        caveat_from_evidence(result, ctx.sources)
        return result


@register("vanilla-llm")
class VanillaLlm(AnswerStrategy):
    description = "the language model alone, from its own knowledge (no retrieval)"
    requires = frozenset({Requirement.FREE_TEXT})
    uses_sources = False
    Params = NoParams

    def answer(self, question: str, ctx: EngineContext, params: NoParams) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        generations = ctx.generator.generate([GenerationRequest(question, [])])
        record(stats, generations)
        return _result(self.name, ctx, generations[0].text, stats, started, 1.0)


def _phrases(answer: str, max_len: int = 3) -> set[str]:
    """Keywords and short phrases (1-3 content words) of one isolated answer."""
    words = content_words(answer)
    return {" ".join(words[i : i + n]) for n in range(1, max_len + 1) for i in range(len(words) - n + 1)}


@register("robust-rag")
class RobustRag(AnswerStrategy):
    """RobustRAG keyword aggregation (Xiang et al., 2024).

    Answer each pooled passage in isolation, keep phrases that appear in at least
    min(beta, alpha * n) of the non-IDK answers, then answer once more with the kept
    keywords as hints. A span reader cannot use hints, so with it the kept phrase
    with most support (longest on ties) is the answer.
    """

    description = "isolate-then-aggregate keywords over the pooled top-10 passages"
    Params = RobustRagParams

    def answer(self, question: str, ctx: EngineContext, params: RobustRagParams) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        vector = ctx.embedder.encode([question])[0]
        passages = ctx.retriever.top_k_pooled(vector, params.pooled_k)
        generations = ctx.generator.generate([GenerationRequest(question, [p.text]) for p in passages])
        record(stats, generations)
        answers = [g.text for g in generations if not is_idk(g.text)]
        threshold = min(params.beta, params.alpha * len(answers))
        counts: Counter[str] = Counter()
        for text in answers:
            counts.update(_phrases(text))
        kept = [(p, c) for p, c in counts.items() if c >= max(threshold, 1)]
        trace: dict[str, object] = {"keywords": [p for p, _ in kept]}
        # A passage is used when its isolated answer holds a kept keyword.
        kept_words = {p for p, _ in kept}
        evidence: list[Evidence] = []
        for passage, generation in zip(passages, generations, strict=True):
            used = not is_idk(generation.text) and bool(_phrases(generation.text) & kept_words)
            evidence.extend(passage_evidence([passage], used=used))
        if not kept:
            result = _result(self.name, ctx, IDK, stats, started, 0.0)
        else:
            best, support = max(kept, key=lambda pc: (pc[1], len(pc[0].split())))
            confidence = support / len(answers)
            if Capability.FREE_TEXT not in ctx.generator.capabilities:
                # Return the original surface form of the best phrase.
                surface = next((a for a in answers if best in " ".join(content_words(a))), best)
                result = _result(
                    self.name, ctx, surface if normalize_answer(surface) else best, stats, started, confidence
                )
            else:
                hints = ", ".join(p for p, _ in sorted(kept, key=lambda pc: -pc[1]))
                prompt = (
                    "Answer the question with a few words, using these keywords gathered from "
                    f"several independent passages as hints: {hints}.\n"
                    'If they do not answer the question, say "I don\'t know".\n'
                    f"Question: {question.strip()}\nAnswer:"
                )
                final = ctx.generator.generate([GenerationRequest(question, [], prompt=prompt)])
                record(stats, final)
                result = _result(self.name, ctx, final[0].text, stats, started, confidence)
        result.evidence = evidence
        result.trace = trace
        caveat_from_evidence(result, ctx.sources)
        return result
