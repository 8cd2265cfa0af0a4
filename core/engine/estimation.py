"""Reliability estimation over fact-checking questions, resumable step by step.

answer_pairs() answers a batch of (query, source) pairs (one retrieval per query for all
its sources, one batched generator call, f_align); the caller may persist the records.
estimate_from_records() clusters each query's stored responses, builds the queries x
sources vote matrix and runs a registered estimator (DEFAULT_ESTIMATOR, AccuCopy, unless
one is named; see core.engine.reliability). estimate() chains both for in-memory use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from core.engine.backends.generation.base import GenerationRequest
from core.engine.backends.nli import NLI
from core.engine.reliability import DEFAULT_ESTIMATOR, GOLD_NONE, Prior, ReliabilityResult, get_estimator, to_matrix
from core.engine.reliability.base import MISSING, LabelMatrix
from core.engine.reliability.identify import equalise, identify
from core.engine.reliability.topical import TopicalReliability, topical_reliability
from core.engine.steps.alignment import align_many, support_texts
from core.engine.steps.calibration import Calibration, calibrate
from core.engine.steps.clustering import cluster_answers, clustering_texts
from core.engine.steps.dependence import groups_from_dependence, units
from core.engine.steps.relevance import generate_read, on_topic, subject_floor
from core.engine.steps.voting import candidate_count
from core.engine.strategies.base import EngineContext
from core.engine.text import IDK, answer_contains_gold
from core.engine.topics import TopicModel, find_topics, match_topics
from core.engine.types import CallStats, Passage, Vector


@dataclass
class ResponseRecord:
    query_index: int
    source_id: int
    raw_response: str
    response: str  # after f_align
    filtered: bool
    score: float
    cluster: int | None = None
    chunk_ids: list[int] = field(default_factory=list)  # the passages the source read (provenance)


@dataclass
class EstimationResult:
    records: list[ResponseRecord]
    reliability: ReliabilityResult
    source_ids: list[int]  # column order of the vote matrix
    stats: CallStats

    def by_source(self) -> dict[int, float]:
        return {sid: s.weight for sid, s in zip(self.source_ids, self.reliability.sources, strict=False)}


def answer_pairs(
    questions: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    ctx: EngineContext,
    stats: CallStats | None = None,
) -> list[ResponseRecord]:
    """Responses for (query index, source id) pairs, in the order given."""
    stats = stats if stats is not None else CallStats()
    by_query: dict[int, list[int]] = {}
    for q, s in pairs:
        by_query.setdefault(q, []).append(s)
    queries = sorted(by_query)
    vectors: list[Vector] = list(ctx.embedder.encode([questions[q] for q in queries])) if queries else []
    passages: dict[tuple[int, int], list[Passage]] = {}
    for q, vector in zip(queries, vectors, strict=False):
        hits = ctx.retriever.top_k_per_source(vector, by_query[q], ctx.params.k)
        floor = subject_floor((p for found in hits.values() for p in found), ctx.params.min_relevance)
        for s in by_query[q]:
            # Passages retrieved for another subject are not read (steps.relevance): a source
            # left with none abstains without a generator call.
            passages[(q, s)] = on_topic(questions[q], hits.get(s, []), ctx.params.min_relevance, floor)
    generations = generate_read(
        ctx.generator,
        [GenerationRequest(questions[q], [p.text for p in passages[(q, s)]], one_source=True) for q, s in pairs],
    )
    answered = [g for g in generations if g is not None]
    raw = [IDK if g is None else g.text for g in generations]
    stats.calls += len(answered)  # a pair without a passage about its query made no call
    stats.prompt_tokens += sum(g.prompt_tokens for g in answered)
    stats.completion_tokens += sum(g.completion_tokens for g in answered)
    positions_of: dict[int, list[int]] = {q: [] for q in queries}
    for i, (pq, _) in enumerate(pairs):
        positions_of[pq].append(i)
    _prepare(
        ctx.nli,
        (
            text
            for q in queries
            for text in support_texts(
                questions[q],
                [raw[i] for i in positions_of[q]],
                [[p.text for p in passages[pairs[i]]] for i in positions_of[q]],
            )
        ),
    )
    records: list[ResponseRecord] = [None] * len(pairs)  # type: ignore[list-item]  # every slot is filled below
    for q in queries:
        positions = positions_of[q]
        aligned = align_many(
            questions[q],
            [raw[i] for i in positions],
            [[p.text for p in passages[pairs[i]]] for i in positions],
            ctx.nli,
            ctx.params.tau,
        )
        for i, result in zip(positions, aligned, strict=False):
            records[i] = ResponseRecord(
                q,
                pairs[i][1],
                raw[i],
                result.response,
                result.filtered,
                result.score,
                chunk_ids=[p.chunk_id for p in passages[pairs[i]]],
            )
    return records


PREPARE_QUERIES = 500  # queries whose clustering texts are encoded in one batched call


def _prepare(nli: NLI | None, texts: Iterable[str]) -> None:
    """Let an NLI that encodes texts (the offline one) encode all of them in one batched call
    ahead of the per-query calls that need them: the model's per-call cost is paid once."""
    prepare = getattr(nli, "prepare", None)
    if prepare is not None:
        prepare(texts)


def estimate_from_records(
    questions: Sequence[str],
    source_ids: Sequence[int],
    records: Sequence[ResponseRecord],
    nli: NLI | None,
    strict: bool = False,
    alpha: float = 1.0,
    beta: float = 1.0,
    estimator: str = DEFAULT_ESTIMATOR,
    gold: Mapping[int, Sequence[str]] | None = None,
    topics: TopicInput | None = None,
) -> tuple[ReliabilityResult, list[ResponseRecord]]:
    """Cluster each query's responses, build the vote matrix, run the named estimator
    with a Beta(alpha, beta) prior.

    ``gold`` maps a query index to its reference answers: the cluster most of whose members'
    responses contain a reference answer is that query's gold label (GOLD_NONE when no
    cluster does), which anchors the estimator (see core.engine.reliability.base).
    Missing (query, source) pairs count as IDK, so a partial run still estimates.
    Records get their cluster label set in place.

    ``topics`` (the queries' vectors, optional tags, the earlier run's topics): the result
    also carries each source's reliability per topic (``result.topical``,
    core.engine.reliability.topical), topics found from the queries and their answers.
    """
    chosen = get_estimator(estimator)  # an unknown name fails before any clustering
    column = {sid: j for j, sid in enumerate(source_ids)}
    matrix: list[list[int | None]] = [[None] * len(source_ids) for _ in questions]
    by_query: dict[int, list[ResponseRecord]] = {}
    for record in records:
        if record.source_id in column:
            by_query.setdefault(record.query_index, []).append(record)
    groups = list(by_query.items())
    for start in range(0, len(groups), PREPARE_QUERIES):
        window = groups[start : start + PREPARE_QUERIES]
        _prepare(
            nli, (text for q, group in window for text in clustering_texts([r.response for r in group], questions[q]))
        )
        for q, group in window:
            clustering = cluster_answers([r.response for r in group], nli, questions[q], strict)
            for record, label in zip(group, clustering.labels, strict=False):
                record.cluster = label
                matrix[q][column[record.source_id]] = label
    gold_labels = {
        q: gold_label([r for r in by_query.get(q, []) if r.cluster is not None], references)
        for q, references in (gold or {}).items()
        if references and 0 <= q < len(questions)
    }
    votes = to_matrix(matrix)
    result = chosen.estimate(
        votes, prior=Prior(alpha, beta), gold=gold_labels or None, candidates=answer_candidates(matrix)
    )
    # Does agreement identify the estimate, or only the sizes of two groups of sources? When
    # not, neither group is amplified (core.engine.reliability.identify).
    found = identify(votes, result, gold=gold_labels)
    settled = equalise(result, found, scheme=chosen.weight_scheme)
    if topics is not None and len(questions):
        settled = replace(
            settled,
            topical=estimate_topics(
                questions, votes, settled, topics, scheme=chosen.weight_scheme, gold=gold_labels, matrix=matrix
            ),
        )
    return settled, list(records)


@dataclass(frozen=True)
class TopicInput:
    """What per-topic estimation needs beside the answers: each query's vector (the product's
    embedder), a curator's tag per query where there is one, the earlier run's topics (so
    keys and names carry over)."""

    vectors: Sequence[Vector]
    tags: Sequence[str | None] | None = None
    previous: TopicModel | None = None


def estimate_topics(
    questions: Sequence[str],
    votes: LabelMatrix,
    result: ReliabilityResult,
    topics: TopicInput,
    *,
    scheme: str,
    gold: Mapping[int, int] | None,
    matrix: Sequence[Sequence[int | None]],
) -> TopicalReliability | None:
    """Find the queries' topics (their text, or a curator's tags) and estimate every source
    on each; None when the queries form one topic.

    The topics are cut from the text (the queries' embeddings, or their character n-grams),
    never from where the sources' answers differ alone: topics cut where some source happened
    to disagree are then "found" to differ in that source's reliability, by construction
    (measured: clustering on the answers as well gave sources whose reliability does not vary
    by topic differences of 0.4 between topics, and cost 2.6 points against one reliability
    per source on PoisonedRAG's beta prior). The answers choose among the text's splits: the
    one whose per-topic accuracies best predict, on held-out queries placed by their text,
    which sources agree with the estimated answers (core.engine.topics.held_out_fit), and
    none unless it beats one accuracy per source. Only then do they move queries between the
    chosen split's topics, where text and agreement together say so
    (core.engine.topics.refine_by_answers), kept when held-out answers are predicted better;
    the cells below are fit on those labels, so a refined split's cells differ a little more
    than its text alone would make them (where nothing varies by topic, no split is chosen
    and nothing is refined: the beta and adversary-hammer controls were unchanged)."""
    if len(topics.vectors) != len(questions):
        raise ValueError("one vector per query")
    truth = np.array([MISSING if a is None else int(a) for a in result.answers], dtype=np.int64)
    for q, label in (gold or {}).items():
        truth[q] = label
    answered = (votes >= 0) & (truth[:, None] >= 0)
    agree = (votes == truth[:, None]) & answered
    fit = find_topics(
        questions, topics.vectors, topics.tags, agreement=(agree.astype(np.float64), answered.astype(np.float64))
    )
    model = match_topics(fit.model, topics.previous)
    if len(model.topics) < 2:
        return None
    # The queries of the run belong to the topics they were found in; a new question is
    # assigned softly by its text (TopicModel.membership).
    membership = np.eye(len(model.topics))[fit.labels]
    topical = topical_reliability(
        votes, result, membership, model.keys, scheme=scheme, candidates=answer_candidates(matrix), gold=gold
    )
    return replace(topical, model=model, query_topics=list(fit.labels))


def answer_candidates(matrix: Sequence[Sequence[int | None]]) -> list[int | None]:
    """Per query, how many answers the one-coin model chooses among: the distinct answer
    clusters the sources gave, plus one for "none of them" (None when nobody answered).

    An open question has no fixed answer set, but its clusters are the candidates the vote
    actually chooses among. Knowing K lets a source right less than half the time still
    count where it beats chance (1 / K): with K unknown its log-odds weight is floored at
    zero below 0.5, and with many mediocre sources (a Beta prior) the estimate then rests on
    the few above 0.5 (core.engine.reliability.weights). Only this path passes K: in truth
    discovery the wrong values are far from uniform (co-author lists), see docs/benchmarks.md."""
    return [candidate_count(row) if any(label is not None for label in row) else None for row in matrix]


def gold_label(records: Sequence[ResponseRecord], references: Sequence[str]) -> int:
    """The cluster whose members mostly give a reference answer (the largest share wins;
    ties go to the larger cluster, then the smaller label); GOLD_NONE when none does."""
    members: dict[int, list[bool]] = {}
    for record in records:
        if record.cluster is not None:
            hit = any(answer_contains_gold(record.response, ref) for ref in references)
            members.setdefault(record.cluster, []).append(hit)
    scored = [
        (sum(hits) / len(hits), len(hits), -label, label)
        for label, hits in members.items()
        if sum(hits) * 2 > len(hits)
    ]
    return max(scored)[3] if scored else GOLD_NONE


def estimate(
    questions: Sequence[str],
    ctx: EngineContext,
    estimator: str = DEFAULT_ESTIMATOR,
    gold: Mapping[int, Sequence[str]] | None = None,
    topics: TopicInput | None = None,
) -> EstimationResult:
    """Every question against every source, then the named estimator (AccuCopy by default);
    with ``topics``, per-topic reliabilities too."""
    get_estimator(estimator)  # an unknown name fails before any generator call
    stats = CallStats()
    source_ids = [s.id for s in ctx.sources]
    pairs = [(q, s) for q in range(len(questions)) for s in source_ids]
    records = answer_pairs(questions, pairs, ctx, stats)
    result, records = estimate_from_records(
        questions,
        source_ids,
        records,
        ctx.nli,
        ctx.params.strict_clustering,
        estimator=estimator,
        gold=gold,
        topics=topics,
    )
    return EstimationResult(records, result, source_ids, stats)


def calibration_from_records(
    records: Sequence[ResponseRecord],
    source_ids: Sequence[int],
    result: ReliabilityResult,
    gold: Mapping[int, Sequence[str]],
    kappa: int,
    seed: int = 0,
    *,
    scheme: str = "paper",
) -> Calibration:
    """How answer probabilities relate to being right on the checked queries (``gold``: query
    index -> reference answers) of an estimate: core.engine.steps.calibration over the
    records' clusters (set by estimate_from_records) and the estimate's accuracies and
    weights (``scheme``: the estimator's weight scheme; "log-odds" weighs each checked
    query's votes by its candidate answers, as answering does; the estimate's copy groups
    count once, as answering counts them: core.engine.steps.dependence). The identity when
    nothing was checked."""
    if not gold:
        return Calibration()
    column = {sid: j for j, sid in enumerate(source_ids)}
    rows = 1 + max(gold)
    matrix: list[list[int | None]] = [[None] * len(column) for _ in range(rows)]
    by_query: dict[int, list[ResponseRecord]] = {}
    for record in records:
        if record.query_index in gold and record.source_id in column:
            by_query.setdefault(record.query_index, []).append(record)
            matrix[record.query_index][column[record.source_id]] = record.cluster
    truth: dict[int, int | None] = {}
    for q, references in gold.items():
        label = gold_label(by_query.get(q, []), references)
        truth[q] = None if label == GOLD_NONE else label
    accuracies: list[float | None] = [s.accuracy for s in result.sources]
    identified = result.identification.identified if result.identification is not None else True
    groups = groups_from_dependence(result.dependence, list(source_ids), identified=identified)
    return calibrate(
        matrix,
        truth,
        accuracies,
        [s.weight for s in result.sources],
        kappa,
        seed=seed,
        by_candidates=scheme == "log-odds",
        units=units(list(source_ids), groups) if groups else None,
    )
