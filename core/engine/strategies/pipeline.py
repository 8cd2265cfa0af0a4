"""Steps shared by the strategies: retrieve for all sources at once (or, for κ-RRSS, for the
sources as it reaches them), generate, filter, cluster, vote, and turn what was read into
evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from core.engine.backends.generation.base import GenerationRequest
from core.engine.reliability.weights import PRIOR_ACCURACY
from core.engine.steps.alignment import align_many, support_scores, support_texts
from core.engine.steps.clustering import Clustering, answer_texts, cluster_answers, unsettled_texts
from core.engine.steps.dependence import once_per_group, units
from core.engine.steps.relevance import MIN_SIMILARITY, generate_read, on_topic, subject_floor
from core.engine.steps.voting import (
    VoteOutcome,
    answer_probability,
    candidate_weights,
    weighted_vote,
)
from core.engine.strategies.base import (
    ClusterInfo,
    EngineContext,
    Evidence,
    SourceEvent,
    SourceState,
    SourceVote,
    StrategyResult,
    record,
)
from core.engine.text import IDK, is_idk
from core.engine.types import CallStats, Passage, SourceInfo, Vector


def retrieve_per_source(
    question: str,
    ctx: EngineContext,
    k: int,
    sources: Sequence[SourceInfo] | None = None,
    vector: Vector | None = None,
) -> dict[int, list[Passage]]:
    """Embed the question once (unless ``vector`` is its embedding); one retriever call for every source."""
    if vector is None:
        vector = ctx.embedder.encode([question])[0]
    ids = [s.id for s in (sources if sources is not None else ctx.sources)]
    return ctx.retriever.top_k_per_source(vector, ids, k)


class PassagesAhead:
    """Per-source passages searched as κ-RRSS reaches the sources, not all at once.

    The question is encoded once, on the first search (not at all when ``vector`` is given). A batch that reaches sources not yet
    searched searches them together with the sources after them, in visiting order: twice the
    batch, or as many as have been searched so far if more (κ = 4: 8, then 8 more, 16, 32...).
    Most questions visit fewer than 2κ sources (some abstain) and need one search; one that
    visits n sources needs about log2(n / κ) searches; the sources κ-RRSS never reaches (most
    of them, over many sources) are never searched. Each source's top-k does not depend
    on which other sources are searched with it, so every source gets the passages one search
    over all sources would give it."""

    def __init__(
        self, question: str, ctx: EngineContext, k: int, order: Sequence[SourceInfo], vector: Vector | None = None
    ) -> None:
        self.question = question
        self.ctx = ctx
        self.k = k
        self.order = [s.id for s in order]
        self.position = {sid: i for i, sid in enumerate(self.order)}
        # Every source searched so far, in the order searched, with its passages.
        self.passages: dict[int, list[Passage]] = {}
        self._vector: Vector | None = vector  # the question's embedding where the caller has it

    def searched(self) -> list[int]:
        return list(self.passages)

    def cover(self, batch: Sequence[SourceInfo]) -> Mapping[int, list[Passage]]:
        """The passages of every source of ``batch`` (and of the sources searched before)."""
        missing = [s.id for s in batch if s.id not in self.passages]
        if not missing:
            return self.passages
        listed = [self.position[sid] for sid in missing if sid in self.position]
        ids = [sid for sid in missing if sid not in self.position]  # not in the visiting order
        if listed:
            start = min(listed)
            end = max(max(listed) + 1, start + max(len(self.passages), 2 * len(batch)))
            ids += [sid for sid in self.order[start:end] if sid not in self.passages]
        if self._vector is None:
            self._vector = self.ctx.embedder.encode([self.question])[0]
        found = self.ctx.retriever.top_k_per_source(self._vector, ids, self.k)
        self.passages.update({sid: list(found.get(sid, [])) for sid in ids})
        return self.passages


def answer_sources(
    question: str,
    ctx: EngineContext,
    sources: Sequence[SourceInfo],
    passages: Mapping[int, list[Passage]],
    stats: CallStats,
    tau: float,
    use_filter: bool = True,
    *,
    lazy: bool = False,
    min_relevance: float = MIN_SIMILARITY,
) -> list[SourceVote]:
    """One batched generator call over the sources, then f_align (one batched NLI call).
    Reports each source as asked, then as answered, abstaining or filtered (ctx.report).

    ``lazy`` (κ-RRSS, which answers batch after batch): nothing is encoded ahead, and the
    filter decides what it can without the embedding model (align_many's lazy mode); the
    caller then settles the votes' exact scores and the clustering's texts in one batched
    encoding (settle_scores), instead of one per batch."""
    if not sources:
        return []
    ctx.report([SourceEvent(s.id, s.name, SourceState.ASKING) for s in sources])
    # Passages retrieved for another subject are neither read nor support (steps.relevance):
    # a source left with none abstains without a generator call.
    floor = subject_floor((p for found in passages.values() for p in found), min_relevance)
    passages = {s.id: on_topic(question, passages.get(s.id, []), min_relevance, floor) for s in sources}
    generations = generate_read(
        ctx.generator,
        [GenerationRequest(question, [p.text for p in passages[s.id]], one_source=True) for s in sources],
    )
    record(stats, [g for g in generations if g is not None])
    raw = [IDK if g is None else g.text for g in generations]
    backends = ["" if g is None else g.backend for g in generations]
    texts = [[p.text for p in passages[s.id]] for s in sources]
    if not lazy:
        encode_ahead(question, ctx, raw, texts, use_filter)
    aligned = align_many(question, raw, texts, ctx.nli, tau, lazy=lazy) if use_filter else None
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
                passages=list(passages[source.id]),
                backend=backends[i],
            )
        )
    ctx.report([vote_event(v) for v in votes])
    return votes


def encode_ahead(
    question: str,
    ctx: EngineContext,
    answers: Sequence[str],
    texts: Sequence[Sequence[str]],
    use_filter: bool,
    clustering: Iterable[str] | None = None,
) -> None:
    """One batched encoding of every text the filter and the clustering will score for these
    answers, for an NLI that encodes (EmbeddingLexicalNLI.prepare), instead of one call each.
    ``clustering``: the clustering's texts, when fewer than every answer's are needed (the
    pairs the NLI's bounds leave open, clustering.unsettled_texts)."""
    prepare = getattr(ctx.nli, "prepare", None)
    if not callable(prepare):
        return
    wanted = set(answer_texts(answers, question) if clustering is None else clustering)
    if use_filter:
        wanted |= support_texts(question, answers, texts)
    prepare(wanted)


def settle_scores(question: str, ctx: EngineContext, votes: Sequence[SourceVote], use_filter: bool) -> None:
    """After answer_sources(lazy=True): one batched encoding of every text the votes'
    exact alignment scores and their clustering need (only the answer pairs the NLI's bounds
    leave open), then the exact scores in place (the decisions were already those of the
    exact scores)."""
    raw = [v.raw_response for v in votes]
    texts = [[p.text for p in v.passages] for v in votes]
    if callable(getattr(ctx.nli, "prepare", None)):
        unsettled = unsettled_texts([v.response for v in votes], ctx.nli, question)
        encode_ahead(question, ctx, raw, texts, use_filter, clustering=unsettled)
    if not use_filter:
        return
    answered = [i for i, r in enumerate(raw) if not is_idk(r)]
    scored = support_scores(question, [raw[i] for i in answered], [texts[i] for i in answered], ctx.nli)
    for i, (score, _) in zip(answered, scored, strict=True):
        votes[i].align_score = score


def vote_event(vote: SourceVote) -> SourceEvent:
    """The state a source's vote leaves it in."""
    if vote.filtered:
        state = SourceState.FILTERED
    elif is_idk(vote.response):
        state = SourceState.ABSTAINED
    else:
        state = SourceState.ANSWERED
    return SourceEvent(vote.source_id, vote.source_name, state, vote.response)


def report_waiting(ctx: EngineContext, sources: Sequence[SourceInfo]) -> None:
    """Every source a strategy may ask, in the order it would ask them, as waiting."""
    ctx.report([SourceEvent(s.id, s.name, SourceState.WAITING) for s in sources])


def report_skipped(ctx: EngineContext, sources: Sequence[SourceInfo], asked: Iterable[int]) -> None:
    """The sources a strategy did not ask after all, as skipped."""
    done = set(asked)
    ctx.report([SourceEvent(s.id, s.name, SourceState.SKIPPED) for s in sources if s.id not in done])


def cluster_votes(question: str, ctx: EngineContext, votes: Sequence[SourceVote], strict: bool = False) -> Clustering:
    """The votes' responses clustered into answers (IDK: no cluster)."""
    return cluster_answers(
        [v.response for v in votes],
        ctx.nli,
        question=question,
        strict=strict,
        weights=[v.weight for v in votes],
    )


def cluster_and_vote(
    question: str,
    ctx: EngineContext,
    votes: list[SourceVote],
    strict: bool = False,
    *,
    estimated: bool = True,
    clustering: Clustering | None = None,
) -> tuple[VoteOutcome, list[ClusterInfo], str]:
    """Cluster the votes' responses in place, run WMV with each vote's weight. The outcome's
    confidence is the answer's probability under the one-coin model (answer_probability),
    from the sources' estimated accuracies, not the winner's share of the vote, calibrated
    on the latest estimation's checked answers where there were some (ctx.calibration).

    ``estimated``: the votes carry the estimate's weights (not MV's ones or the oracle's);
    under a log-odds estimator (ctx.weight_scheme) they are then the weights on this
    question's candidate answers (candidate_weights), as the estimator weighed them.
    ``clustering``: the votes' responses already clustered (cluster_votes)."""
    if clustering is None:
        clustering = cluster_votes(question, ctx, votes, strict)
    for vote, label in zip(votes, clustering.labels, strict=False):
        vote.cluster = label
    accuracy = {s.id: s.accuracy for s in ctx.sources}
    accuracies = [accuracy.get(v.source_id) for v in votes]
    weights = [v.weight for v in votes]
    if estimated and ctx.weight_scheme == "log-odds":
        own = [v.weight / v.factor if v.factor > 0 else 0.0 for v in votes]
        weights = [
            v.factor * w for v, w in zip(votes, candidate_weights(clustering.labels, accuracies, own), strict=True)
        ]
        for vote, weight in zip(votes, weights, strict=True):
            vote.weight = weight
    # Sources the latest estimation found copying each other count once (steps.dependence):
    # in the vote, with the heaviest member's weight; in the probability, as one voice.
    vote_units = units([v.source_id for v in votes], ctx.copy_groups) if estimated and ctx.copy_groups else None
    if vote_units is not None:
        weights = once_per_group(clustering.labels, vote_units, weights)
        for vote, weight in zip(votes, weights, strict=True):
            vote.weight = weight
    outcome = weighted_vote(clustering.labels, weights)
    probability = answer_probability(clustering.labels, accuracies, outcome.winner, units=vote_units)
    outcome = replace(outcome, confidence=ctx.calibration.apply(probability))
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


# An accuracy estimated from fewer non-IDK answers than this is thin evidence of reliability.
FEW_CHECKED_ANSWERS = 5


def _sources_phrase(count: int) -> str:
    return f"{count} source" if count == 1 else f"{count} sources"


def _named(sources: Sequence[SourceInfo], limit: int = 3) -> str:
    names = ", ".join(s.name for s in sources[:limit])
    return names + (f" and {len(sources) - limit} more" if len(sources) > limit else "")


def never_checked(source: SourceInfo) -> bool:
    """No estimation run has measured this source: it votes with the prior accuracy."""
    return source.accuracy is None or source.answers_count == 0


def evidence_caveat(
    confidence: float, backers: Iterable[int], sources: Sequence[SourceInfo]
) -> tuple[float, str | None]:
    """The confidence to show for an answer backed by the sources ``backers`` (ids), and a
    plain-language note when they are little evidence.

    - every backer never estimated (accuracy None or no checked answer): the confidence is
      capped at the prior accuracy (PRIOR_ACCURACY, 0.5): the share of the vote says nothing
      about truth when nobody's reliability is known (one unchecked source voting alone wins
      100% of the vote);
    - every backer never estimated or estimated on fewer than FEW_CHECKED_ANSWERS answers: a
      note only.
    Otherwise (an estimated source behind the answer, as always in the benchmark) the
    confidence is returned unchanged and there is no note, so WMV itself is untouched."""
    by_id = {s.id: s for s in sources}
    behind = [by_id[i] for i in dict.fromkeys(backers) if i in by_id]
    if not behind:
        return confidence, None
    unchecked = [s for s in behind if never_checked(s)]
    if len(unchecked) == len(behind):
        capped = min(confidence, PRIOR_ACCURACY)
        return capped, (
            f"This answer rests on {_sources_phrase(len(behind))} whose reliability has never been checked "
            f"({_named(behind)}): run a reliability estimation before trusting it. "
            f"Its confidence is capped at {PRIOR_ACCURACY:.2f}, the accuracy assumed for an unchecked source."
        )
    thin = [s for s in behind if not never_checked(s) and s.answers_count < FEW_CHECKED_ANSWERS]
    if len(unchecked) + len(thin) == len(behind):
        most = max(s.answers_count for s in thin)
        return confidence, (
            f"This answer rests on {_sources_phrase(len(behind))} whose reliability rests on few checked "
            f"answers (at most {most}; {_named(behind)}): treat it with caution."
        )
    return confidence, None


def unreliable_only(backers: Iterable[int], sources: Sequence[SourceInfo], candidates: int = 2) -> str | None:
    """Why an answer backed by ``backers`` (ids) is no reliable answer: every one of them has
    been estimated, and estimated less accurate than chance among the question's
    ``candidates`` answers (voting.candidate_count: the answers given plus "none of them";
    below 1 / K a source's log-odds weight on the question is zero). None otherwise.

    Such an answer is what is left when the reliable sources abstained or were filtered (on
    the demo, "Emma Bull" from the content farm alone, at weight 0): it is shown beside the
    abstention, never as the answer."""
    by_id = {s.id: s for s in sources}
    behind = [by_id[i] for i in dict.fromkeys(backers) if i in by_id]
    chance = 1.0 / max(candidates, 2)
    if not behind or any(never_checked(s) or (s.accuracy or 0.0) >= chance for s in behind):
        return None
    rated = ", ".join(f"{s.name} ({(s.accuracy or 0.0):.2f})" for s in behind[:3])
    more = f" and {len(behind) - 3} more" if len(behind) > 3 else ""
    return (
        f"No reliable answer: the only answer given came from {_sources_phrase(len(behind))} estimated "
        f"right less often than chance ({rated}{more}); the sources estimated reliable did not answer."
    )


CONTESTED_SHARE = 0.25  # a losing answer with at least this share of the vote weight is named


def contested_note(clusters: Sequence[ClusterInfo], winner_label: str, sources: Sequence[SourceInfo]) -> str | None:
    """A warning naming the strongest losing answer when it holds at least CONTESTED_SHARE of
    the vote weight: the answer is contested however confident its winner looks."""
    total = sum(max(c.weight, 0.0) for c in clusters)
    losers = [c for c in clusters if c.label != winner_label and c.weight > 0]
    if total <= 0 or not losers:
        return None
    rival = max(losers, key=lambda c: c.weight)
    share = rival.weight / total
    if share < CONTESTED_SHARE:
        return None
    names = {s.id: s.name for s in sources}
    backers = [names.get(i, f"source {i}") for i in rival.members]
    shown = ", ".join(backers[:3]) + (f" and {len(backers) - 3} more" if len(backers) > 3 else "")
    return (
        f"Contested: {shown} answered “{rival.label}”, {share:.0%} of the vote weight. "
        "Read both answers' passages before relying on it."
    )


def caveat_from_evidence(result: StrategyResult, sources: Sequence[SourceInfo]) -> None:
    """evidence_caveat for a strategy without per-source votes (pooled retrieval): the answer
    is backed by the sources of the passages it used. Adjusts ``result`` in place."""
    if is_idk(result.answer):
        return
    backers = [e.source_id for e in result.evidence if e.used]
    result.confidence, note = evidence_caveat(result.confidence, backers, sources)
    if note:
        result.notes.append(note)


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
