"""Steps shared by the strategies: retrieve for all sources at once, generate, filter,
cluster, vote, and turn what was read into evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from core.engine.backends.generation.base import Generation, GenerationRequest
from core.engine.steps.alignment import align_many
from core.engine.steps.clustering import cluster_answers
from core.engine.steps.voting import VoteOutcome, weighted_vote
from core.engine.strategies.base import ClusterInfo, EngineContext, Evidence, SourceVote
from core.engine.text import IDK, is_idk
from core.engine.types import CallStats, Passage, SourceInfo


def retrieve_per_source(
    question: str, ctx: EngineContext, k: int, sources: Sequence[SourceInfo] | None = None
) -> dict[int, list[Passage]]:
    """Embed the question once; one retriever call for every source."""
    vector = ctx.embedder.encode([question])[0]
    ids = [s.id for s in (sources if sources is not None else ctx.sources)]
    return ctx.retriever.top_k_per_source(vector, ids, k)


def record(stats: CallStats, generations: Sequence[Generation]) -> None:
    stats.calls += len(generations)
    stats.prompt_tokens += sum(g.prompt_tokens for g in generations)
    stats.completion_tokens += sum(g.completion_tokens for g in generations)


def answer_sources(
    question: str,
    ctx: EngineContext,
    sources: Sequence[SourceInfo],
    passages: Mapping[int, list[Passage]],
    stats: CallStats,
    tau: float,
    use_filter: bool = True,
) -> list[SourceVote]:
    """One batched generator call over the sources, then f_align (one batched NLI call)."""
    if not sources:
        return []
    requests = [GenerationRequest(question, [p.text for p in passages.get(s.id, [])]) for s in sources]
    generations = ctx.generator.generate(requests)
    record(stats, generations)
    raw = [g.text for g in generations]
    texts = [[p.text for p in passages.get(s.id, [])] for s in sources]
    aligned = align_many(question, raw, texts, ctx.nli, tau) if use_filter else None
    votes = []
    for i, source in enumerate(sources):
        response = aligned[i].response if aligned else (IDK if is_idk(raw[i]) else raw[i].strip())
        votes.append(
            SourceVote(
                source_id=source.id,
                source_name=source.name,
                raw_response=raw[i],
                response=response,
                filtered=aligned[i].filtered if aligned else False,
                align_score=aligned[i].score if aligned else 0.0,
                cluster=None,
                weight=source.weight,
                passages=list(passages.get(source.id, [])),
            )
        )
    return votes


def cluster_and_vote(
    question: str, ctx: EngineContext, votes: list[SourceVote], strict: bool = False
) -> tuple[VoteOutcome, list[ClusterInfo], str]:
    """Cluster the votes' responses in place, run WMV with each vote's weight."""
    clustering = cluster_answers(
        [v.response for v in votes],
        ctx.nli,
        question=question,
        strict=strict,
        weights=[v.weight for v in votes],
    )
    for vote, label in zip(votes, clustering.labels, strict=False):
        vote.cluster = label
    outcome = weighted_vote(clustering.labels, [v.weight for v in votes])
    clusters = [
        ClusterInfo(
            id=cid,
            label=clustering.representatives[cid],
            members=[votes[i].source_id for i in members],
            weight=outcome.weights.get(cid, 0.0),
        )
        for cid, members in enumerate(clustering.members)
    ]
    answer = IDK if outcome.winner is None else clustering.representatives[outcome.winner]
    return outcome, clusters, answer


def passage_evidence(passages: Iterable[Passage], used: bool) -> list[Evidence]:
    return [
        Evidence(
            chunk_id=p.chunk_id, source_id=p.source_id, document_id=p.document_id, distance=float(p.distance), used=used
        )
        for p in passages
    ]


def vote_evidence(votes: Sequence[SourceVote], winner: int | None) -> list[Evidence]:
    """Every passage the voting sources read; used when its source is in the winning cluster."""
    out: list[Evidence] = []
    for vote in votes:
        out.extend(passage_evidence(vote.passages, winner is not None and vote.cluster == winner))
    return out
