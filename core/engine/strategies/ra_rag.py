"""RA-RAG and its ablations: kappa-RRSS, kappa-RSS, all sources, no filter, MV, oracle WMV."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from core.engine.params import ParamSet, param
from core.engine.steps.clustering import reweighed
from core.engine.steps.dependence import copied_note
from core.engine.steps.relevance import MIN_SIMILARITY
from core.engine.steps.selection import by_reliability, kappa_rrss, kappa_rss
from core.engine.steps.topic_weights import (
    answer_share,
    copy_groups_on,
    topic_share,
    topics_apply,
    weigh_by_share,
)
from core.engine.steps.voting import candidate_count
from core.engine.strategies.base import (
    Answering,
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
    cluster_votes,
    contested_note,
    evidence_caveat,
    report_skipped,
    report_waiting,
    retrieve_per_source,
    settle_scores,
    unreliable_only,
    vote_evidence,
)
from core.engine.strategies.registry import register
from core.engine.text import IDK, is_idk
from core.engine.types import Passage, SourceInfo

MAX_KAPPA = 50


@dataclass(frozen=True)
class SourceVotingParams(ParamSet):
    """Per-source retrieval, generation, f_align filter, semantic clustering, WMV."""

    k: int = param(3, low=1, high=50, help="passages retrieved from each source")
    tau: float = param(0.1, low=0.0, high=1.0, help="alignment threshold: a response less entailed is turned into IDK")
    strict_clustering: bool = param(False, help="cluster answers only when they entail each other both ways")
    min_relevance: float = param(
        MIN_SIMILARITY,
        low=0.0,
        high=1.0,
        help="a passage less similar to the question (cosine), and holding under half its words, is not read (0: all)",
    )


@dataclass(frozen=True)
class RaRagParams(SourceVotingParams):
    kappa: int = param(4, low=1, high=MAX_KAPPA, help="how many reliable sources with a relevant answer to consult")


class _Voting(AnswerStrategy[SourceVotingParams]):
    """Every source (after ``weights``) answers; the votes are clustered and weighed."""

    Params = SourceVotingParams
    use_filter: ClassVar[bool] = True
    estimated: ClassVar[bool] = True  # the votes weigh with the estimate (not MV's ones, not the oracle's)
    # Weigh each source by its reliability on the question's topics (steps.topic_weights)
    # where the run found topics; False: one reliability per source.
    topical: ClassVar[bool] = True

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return sources

    def choose(self, answering: Answering, params: SourceVotingParams, trace: dict[str, object]) -> list[SourceVote]:
        """The votes: each chosen source answers from its own passages (f_align filtered)."""
        sources = self.weights(answering.ctx, list(answering.ctx.sources))
        passages = retrieve_per_source(
            answering.question, answering.ctx, params.k, sources, vector=answering.question_vector()
        )
        return self.vote(answering, sources, passages, params)

    def vote(
        self,
        answering: Answering,
        sources: Sequence[SourceInfo],
        passages: Mapping[int, list[Passage]],
        params: SourceVotingParams,
        *,
        lazy: bool = False,
    ) -> list[SourceVote]:
        """These sources answer from their passages, with the strategy's filter and parameters."""
        return answer_sources(
            answering.question,
            answering.ctx,
            sources,
            passages,
            answering.stats,
            params.tau,
            self.use_filter,
            lazy=lazy,
            min_relevance=params.min_relevance,
        )

    def answer(self, question: str, ctx: EngineContext, params: SourceVotingParams) -> StrategyResult:
        trace: dict[str, object] = {}
        overall = ctx  # the sources with their overall numbers
        vector = None
        text_share: list[float] | None = None
        if self.estimated and self.topical and topics_apply(ctx):
            vector = ctx.embedder.encode([question])[0]  # once: the topics and every search read it
            text_share = topic_share(ctx, vector, question)
            sources, text_record = weigh_by_share(ctx, text_share)
            ctx = replace(ctx, sources=sources)
            trace["topic"] = text_record
        answering = self.begin(question, ctx)
        answering.vector = vector
        listed = by_reliability(ctx.sources)  # the order kappa-RRSS and kappa-RSS ask them in
        report_waiting(ctx, listed)
        votes = self.choose(answering, params, trace)
        report_skipped(ctx, listed, (v.source_id for v in votes))
        clustering = cluster_votes(question, ctx, votes, params.strict_clustering)
        if text_share is not None:
            # The answers are evidence of the topic too: the vote weighs the sources by the
            # question's topics after reading them (steps.topic_weights.answer_share).
            share = answer_share(
                overall, text_share, [(v.source_id, c) for v, c in zip(votes, clustering.labels, strict=True)]
            )
            sources, topic = weigh_by_share(overall, share)
            ctx = replace(overall, sources=sources, copy_groups=copy_groups_on(overall, share))
            weight = {s.id: s.weight for s in sources}
            for vote in votes:
                if vote.source_id in weight:
                    vote.weight = weight[vote.source_id] * vote.factor
            clustering = reweighed(clustering, [v.response for v in votes], [v.weight for v in votes])
            trace["topic"] = {**topic, "text_membership": text_record["membership"]}
        outcome, clusters, answer = cluster_and_vote(
            question, ctx, votes, params.strict_clustering, estimated=self.estimated, clustering=clustering
        )
        backers = [v.source_id for v in votes if outcome.winner is not None and v.cluster == outcome.winner]
        confidence, caveat = evidence_caveat(outcome.confidence, backers, ctx.sources)
        notes = [caveat] if caveat else []
        winner = outcome.winner
        candidates = candidate_count([v.cluster for v in votes])
        # Every source that answered, not only the winner's backers: a reliable source that
        # answered and lost is a contest, not an abstention.
        answered = [v.source_id for v in votes if v.cluster is not None]
        unreliable = unreliable_only(answered, ctx.sources, candidates) if self.estimated else None
        if unreliable:
            # Only sources estimated worse than a coin answered: abstain, and say what they said.
            notes = [f"{unreliable} They said “{answer}”."]
            answer, confidence, winner = IDK, 0.0, None
        else:
            contested = contested_note(clusters, answer, ctx.sources) if winner is not None else None
            notes += [contested] if contested else []
            copied = copied_note(backers, ctx.copy_groups, ctx.sources) if self.estimated and backers else None
            notes += [copied] if copied else []
        return answering.result(
            answer,
            confidence,
            votes=votes,
            clusters=clusters,
            evidence=vote_evidence(votes, winner),
            notes=notes,
            trace=trace,
        )


@register("ra-rag")
class RaRag(_Voting):
    """κ-RRSS asks the sources batch by batch in order of reliability until κ of them give a
    relevant answer; only the sources it reaches are searched (PassagesAhead).

    Each batch decides its filter from the NLI's bounds where it can, without the embedding
    model (``answer_batch``); one batched encoding then settles the exact scores of every
    vote and the clustering's texts (``settle``). The answers are those of filtering each
    batch on exact scores, with fewer encoder calls (tests/engine/test_lazy_alignment.py)."""

    description = "kappa-RRSS source selection, f_align filter, semantic clusters, WMV"
    product = True
    Params = RaRagParams

    def choose(self, answering: Answering, params: SourceVotingParams, trace: dict[str, object]) -> list[SourceVote]:
        assert isinstance(params, RaRagParams)
        ahead = PassagesAhead(
            answering.question,
            answering.ctx,
            params.k,
            by_reliability(answering.ctx.sources),
            vector=answering.question_vector(),
        )
        selection, results = kappa_rrss(
            answering.ctx.sources,
            params.kappa,
            lambda batch: self.answer_batch(answering, batch, ahead.cover(batch), params),
            lambda vote: is_idk(vote.response),
        )
        trace["searched"] = ahead.searched()
        trace["visit_order"] = selection.order
        trace["visited"] = selection.visited
        trace["selected"] = selection.selected
        # Only the selected sources vote; visited abstainers are kept for display (IDK).
        votes = [results[sid] for sid in selection.visited]
        self.settle(answering, votes)
        return votes

    def answer_batch(
        self,
        answering: Answering,
        batch: Sequence[SourceInfo],
        passages: Mapping[int, list[Passage]],
        params: SourceVotingParams,
    ) -> list[SourceVote]:
        """One κ-RRSS batch answers; its filter decides from the NLI's bounds where it can."""
        return self.vote(answering, batch, passages, params, lazy=True)

    def settle(self, answering: Answering, votes: list[SourceVote]) -> None:
        """One batched encoding gives every vote its exact score and the clustering its texts."""
        settle_scores(answering.question, answering.ctx, votes, self.use_filter)


@register("ra-rag-global")
class RaRagGlobal(RaRag):
    description = "RA-RAG with one reliability per source, whatever the question's topic"
    product = False  # an ablation of ra-rag
    topical = False


@register("ra-rag-rss")
class RaRagRss(_Voting):
    description = "the kappa most reliable sources (no relevance check), filter, WMV"
    Params = RaRagParams

    def choose(self, answering: Answering, params: SourceVotingParams, trace: dict[str, object]) -> list[SourceVote]:
        assert isinstance(params, RaRagParams)
        sources = kappa_rss(list(answering.ctx.sources), params.kappa)
        passages = retrieve_per_source(
            answering.question, answering.ctx, params.k, sources, vector=answering.question_vector()
        )
        return self.vote(answering, sources, passages, params)


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
    estimated = False

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        return [replace(s, weight=1.0) for s in sources]


@register("wmv-oracle")
class OracleWmv(_Voting):
    description = "every source, filter, WMV with the true reliabilities (benchmark only)"
    requires = frozenset({Requirement.ORACLE})
    estimated = False

    def weights(self, ctx: EngineContext, sources: list[SourceInfo]) -> list[SourceInfo]:
        oracle = ctx.oracle or {}
        return [replace(s, weight=float(oracle.get(s.id, s.weight))) for s in sources]
