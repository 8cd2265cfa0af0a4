"""RA-RAG and its ablations: kappa-RRSS, kappa-RSS, all sources, no filter, MV, oracle WMV."""

from __future__ import annotations

import time
from dataclasses import replace

from core.engine.steps.selection import kappa_rrss, kappa_rss
from core.engine.strategies.base import (
    AnswerStrategy,
    EngineContext,
    SourceVote,
    StrategyResult,
    register,
)
from core.engine.strategies.pipeline import answer_sources, cluster_and_vote, retrieve_per_source
from core.engine.text import is_idk
from core.engine.types import CallStats, SourceInfo


class _Voting(AnswerStrategy):
    use_filter = True

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return sources

    def choose(self, question: str, ctx: EngineContext, stats: CallStats) -> list[SourceVote]:
        sources = self.weights(ctx, list(ctx.sources))
        passages = retrieve_per_source(question, ctx, sources)
        return answer_sources(question, ctx, sources, passages, stats, self.use_filter)

    def answer(self, question: str, ctx: EngineContext) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        votes = self.choose(question, ctx, stats)
        outcome, clusters, answer = cluster_and_vote(question, ctx, votes)
        return StrategyResult(
            answer=answer,
            confidence=outcome.confidence,
            strategy=self.name,
            backend=ctx.generator.name,
            votes=votes,
            clusters=clusters,
            stats=stats,
            seconds=time.perf_counter() - started,
        )


@register("ra-rag")
class RaRag(_Voting):
    description = "kappa-RRSS source selection, f_align filter, semantic clusters, WMV"

    def choose(self, question: str, ctx: EngineContext, stats: CallStats) -> list[SourceVote]:
        passages = retrieve_per_source(question, ctx)
        selection, results = kappa_rrss(
            ctx.sources,
            ctx.params.kappa,
            lambda batch: answer_sources(question, ctx, batch, passages, stats, self.use_filter),
            lambda vote: is_idk(vote.response),
        )
        stats.extra["visit_order"] = selection.order
        stats.extra["visited"] = selection.visited
        stats.extra["selected"] = selection.selected
        # Only the selected sources vote; visited abstainers are kept for display (IDK).
        return [results[sid] for sid in selection.visited]


@register("ra-rag-rss")
class RaRagRss(_Voting):
    description = "the kappa most reliable sources (no relevance check), filter, WMV"

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return kappa_rss(sources, ctx.params.kappa)


@register("ra-rag-all")
class RaRagAll(_Voting):
    description = "every source, filter, semantic clusters, WMV"


@register("ra-rag-nofilter")
class RaRagNoFilter(RaRag):
    description = "RA-RAG without the f_align filter"
    use_filter = False


@register("mv")
class MajorityVote(_Voting):
    description = "every source, filter, majority vote (all weights 1)"

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return [replace(s, reliability=1.0) for s in sources]


@register("wmv-oracle")
class OracleWmv(_Voting):
    description = "every source, filter, WMV with the true reliabilities (benchmark only)"

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        oracle = ctx.params.oracle_reliabilities
        if oracle is None:
            raise ValueError("wmv-oracle needs params.oracle_reliabilities")
        return [replace(s, reliability=float(oracle.get(s.id, s.reliability))) for s in sources]
