"""RA-RAG and its ablations: kappa-RRSS, kappa-RSS, all sources, no filter, MV, oracle WMV."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import ClassVar

from core.engine.params import ParamSet, param
from core.engine.steps.selection import by_reliability, kappa_rrss, kappa_rss
from core.engine.strategies.base import (
    AnswerStrategy,
    EngineContext,
    Requirement,
    SourceVote,
    StrategyResult,
)
from core.engine.strategies.pipeline import (
    PassagesAhead,
    answer_sources,
    cluster_and_vote,
    evidence_caveat,
    report_skipped,
    report_waiting,
    retrieve_per_source,
    settle_scores,
    vote_evidence,
)
from core.engine.strategies.registry import register
from core.engine.text import is_idk
from core.engine.types import CallStats, SourceInfo

MAX_KAPPA = 50


@dataclass(frozen=True)
class SourceVotingParams(ParamSet):
    """Per-source retrieval, generation, f_align filter, semantic clustering, WMV."""

    k: int = param(3, low=1, high=50, help="passages retrieved from each source")
    tau: float = param(0.1, low=0.0, high=1.0, help="alignment threshold: a response less entailed is turned into IDK")
    strict_clustering: bool = param(False, help="cluster answers only when they entail each other both ways")


@dataclass(frozen=True)
class RaRagParams(SourceVotingParams):
    kappa: int = param(4, low=1, high=MAX_KAPPA, help="how many reliable sources with a relevant answer to consult")


class _Voting(AnswerStrategy):
    """Every source (after ``weights``) answers; the votes are clustered and weighed."""

    Params: ClassVar[type[ParamSet]] = SourceVotingParams
    use_filter: ClassVar[bool] = True

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return sources

    def choose(
        self, question: str, ctx: EngineContext, params: SourceVotingParams, stats: CallStats, trace: dict[str, object]
    ) -> list[SourceVote]:
        sources = self.weights(ctx, list(ctx.sources))
        passages = retrieve_per_source(question, ctx, params.k, sources)
        return answer_sources(question, ctx, sources, passages, stats, params.tau, self.use_filter)

    def answer(self, question: str, ctx: EngineContext, params: SourceVotingParams) -> StrategyResult:
        started = time.perf_counter()
        stats = CallStats()
        trace: dict[str, object] = {}
        listed = by_reliability(ctx.sources)  # the order kappa-RRSS and kappa-RSS ask them in
        report_waiting(ctx, listed)
        votes = self.choose(question, ctx, params, stats, trace)
        report_skipped(ctx, listed, (v.source_id for v in votes))
        outcome, clusters, answer = cluster_and_vote(question, ctx, votes, params.strict_clustering)
        backers = [v.source_id for v in votes if outcome.winner is not None and v.cluster == outcome.winner]
        confidence, caveat = evidence_caveat(outcome.confidence, backers, ctx.sources)
        return StrategyResult(
            answer=answer,
            confidence=confidence,
            strategy=self.name,
            backend=ctx.generator.name,
            votes=votes,
            clusters=clusters,
            evidence=vote_evidence(votes, outcome.winner),
            notes=[caveat] if caveat else [],
            trace=trace,
            stats=stats,
            seconds=time.perf_counter() - started,
        )


@register("ra-rag")
class RaRag(_Voting):
    description = "kappa-RRSS source selection, f_align filter, semantic clusters, WMV"
    product = True
    Params = RaRagParams
    # Each κ-RRSS batch decides its filter from the NLI's bounds where it can, and one batched
    # encoding settles the exact scores at the end (pipeline.settle_scores). False: each batch
    # encodes ahead and filters on exact scores (the same answers; the benchmark's baseline).
    lazy_filter: ClassVar[bool] = True

    def choose(
        self, question: str, ctx: EngineContext, params: SourceVotingParams, stats: CallStats, trace: dict[str, object]
    ) -> list[SourceVote]:
        assert isinstance(params, RaRagParams)
        # Only the sources κ-RRSS reaches are searched, batch by batch (PassagesAhead).
        ahead = PassagesAhead(question, ctx, params.k, by_reliability(ctx.sources))
        lazy = self.lazy_filter
        selection, results = kappa_rrss(
            ctx.sources,
            params.kappa,
            lambda batch: answer_sources(
                question, ctx, batch, ahead.cover(batch), stats, params.tau, self.use_filter, lazy=lazy
            ),
            lambda vote: is_idk(vote.response),
        )
        trace["searched"] = ahead.searched()
        trace["visit_order"] = selection.order
        trace["visited"] = selection.visited
        trace["selected"] = selection.selected
        # Only the selected sources vote; visited abstainers are kept for display (IDK).
        votes = [results[sid] for sid in selection.visited]
        # The batches decided their filter without the embedding model where they could: one
        # batched encoding now gives every vote its exact score and the clustering its texts.
        if lazy:
            settle_scores(question, ctx, votes, self.use_filter)
        return votes


@register("ra-rag-rss")
class RaRagRss(_Voting):
    description = "the kappa most reliable sources (no relevance check), filter, WMV"
    Params = RaRagParams

    def choose(
        self, question: str, ctx: EngineContext, params: SourceVotingParams, stats: CallStats, trace: dict[str, object]
    ) -> list[SourceVote]:
        assert isinstance(params, RaRagParams)
        sources = kappa_rss(list(ctx.sources), params.kappa)
        passages = retrieve_per_source(question, ctx, params.k, sources)
        return answer_sources(question, ctx, sources, passages, stats, params.tau, self.use_filter)


@register("ra-rag-all")
class RaRagAll(_Voting):
    description = "every source, filter, semantic clusters, WMV"


@register("ra-rag-nofilter")
class RaRagNoFilter(RaRag):
    description = "RA-RAG without the f_align filter"
    product = False  # an ablation of ra-rag
    use_filter = False


@register("mv")
class MajorityVote(_Voting):
    description = "every source, filter, majority vote (all weights 1)"

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return [replace(s, weight=1.0) for s in sources]


@register("wmv-oracle")
class OracleWmv(_Voting):
    description = "every source, filter, WMV with the true reliabilities (benchmark only)"
    requires = frozenset({Requirement.ORACLE})

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        oracle = ctx.oracle or {}
        return [replace(s, weight=float(oracle.get(s.id, s.weight))) for s in sources]
