"""MultiRAG over claims (Wu et al., MKLGP, sec. 4.2.4): the answer comes from the claim store;
a language model, when configured, only judges the claims' authority.

1. The question is matched to items (subject, attribute) of the claim store: subjects it
   names first, then embedding similarity of "subject attribute" keys (``min_match``).
2. The homologous group of each of the ``max_items`` best items (claims of the active sources)
   is scored: graph-level and node-level confidence (core.engine.claims.multirag), the
   historical authority from each source's estimated accuracy and the number of answers it
   rests on; an LLM's authority judgement only when the generator writes free text.
3. Groups below the graph threshold are pruned, then nodes below the node threshold. Only
   items as relevant as the best match (RELEVANCE_TIE) can give the answer; when all of them
   are pruned the best-matching one is kept, with a note that confidence is low.
4. The kept claims elect the answer with their sources' voting weights (``vote="weight"``,
   the product's estimator, as RA-RAG's weighted majority vote; ``vote="confidence"`` sums
   node confidence instead). Measured on the items of Flights / Books: 94.0% / 88% with
   weights against 84.3% / 78% with summed confidence, which is mostly a majority vote as
   consistency dominates it. The answer is shown as the raw text its claims most often
   give; its confidence is the value's share of the group's weight. The
   paper has an LLM phrase the answer from the kept nodes; the resolved value *is* that answer
   for the factual questions claims hold, so no generator call is spent on it.

Each step is one method of the strategy: ``match_items``, ``score_items``, ``prune``, ``elect``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.backends.generation.base import Capability, GenerationRequest
from core.engine.claims.multirag import (
    AUTHORITY_ALPHA,
    AUTHORITY_BETA,
    GRAPH_THRESHOLD,
    NODE_THRESHOLD,
    GroupConfidence,
    line_graph,
    llm_authority_prompt,
    parse_llm_score,
    score_group,
)
from core.engine.claims.store import ClaimStore, KeyMatch
from core.engine.claims.types import ClaimRecord
from core.engine.params import ParamSet, param
from core.engine.strategies.base import (
    NO_CHUNK,
    AnswerGraph,
    Answering,
    AnswerStrategy,
    ClusterInfo,
    EngineContext,
    Evidence,
    GraphEdge,
    GraphNode,
    Requirement,
    SourceVote,
    StrategyResult,
)
from core.engine.strategies.pipeline import evidence_caveat
from core.engine.strategies.registry import register
from core.engine.text import IDK
from core.engine.types import JSONObject, SourceInfo

MAX_LLM_NODES = 64  # a larger group gets no LLM judgement (one generator request per node)
MAX_GRAPH_NODES = 200  # claims shown in the answer graph (the answer's group first)
ISOLATED_CAP = 0.5  # an uncorroborated claim is no more than a coin flip
RELEVANCE_TIE = 0.02  # match scores this close to the best one's are equally relevant items


@dataclass(frozen=True)
class MultiRagParams(ParamSet):
    node_threshold: float = param(
        NODE_THRESHOLD,
        low=0.0,
        high=2.0,
        help="node confidence (consistency + authority, 0 to 2) a claim needs to be kept",
    )
    graph_threshold: float = param(
        GRAPH_THRESHOLD,
        low=0.0,
        high=1.0,
        help="graph confidence (agreement of a group's values, 0 to 1) a group needs",
    )
    alpha: float = param(
        AUTHORITY_ALPHA,
        low=0.0,
        high=1.0,
        help="weight of the language model's authority judgement against the source's history",
    )
    beta: float = param(
        AUTHORITY_BETA, low=0.0, high=20.0, help="steepness of the sigmoid turning the LLM's score into authority"
    )
    max_items: int = param(3, low=1, high=20, help="how many matching (subject, attribute) items to score")
    min_match: float = param(
        0.5, low=-1.0, high=1.0, help="similarity an item needs when the question names no subject of the claims"
    )
    vote: str = param(
        "weight",
        choices=("weight", "confidence"),
        help="how the kept claims elect the answer: their sources' voting weights (the product's estimator) "
        "or their summed node confidence",
    )


def _display(claims: Sequence[ClaimRecord]) -> str:
    """The raw text the claims most often give (their normalised value when none has one), of
    the first claim's value (the claims may hold several values within the mapping's tolerance)."""
    raws = Counter(c.raw_value.strip() or c.value for c in claims if c.value == claims[0].value)
    return raws.most_common(1)[0][0]


def _provenance(
    subject: str, attribute: str, behind: Sequence[ClaimRecord], pool: Sequence[SourceInfo], names: dict[int, str]
) -> str:
    """What the answer is about and who says it: the item, then each site behind the value
    with its estimated reliability ("not yet estimated" for a site no run has scored)."""
    accuracy = {s.id: s.accuracy for s in pool}
    counts = {s.id: s.answers_count for s in pool}
    sites = []
    for source_id in dict.fromkeys(c.source_id for c in behind):
        name = names.get(source_id, str(source_id))
        estimated = accuracy.get(source_id)
        if estimated is not None and counts.get(source_id, 0) > 0:
            sites.append(f"{name} (reliability {estimated:.2f})")
        else:
            sites.append(f"{name} (not yet estimated)")
    value = _display(behind) if behind else ""
    return f"{subject}, {attribute}: {value}, as {len(sites)} site{'s' if len(sites) != 1 else ''} list it: " + (
        ", ".join(sites) + "."
    )


def _llm_scores(
    answering: Answering, groups: Sequence[list[ClaimRecord]], names: dict[int, str], trace: dict[str, object]
) -> dict[int, float]:
    """C_LLM of every claim of the groups small enough and in conflict, in one batched
    generator call. A group whose claims all give one value answers directly: asking a model
    how authoritative each of them is could not change the answer, so it costs no call."""
    conflicting = [g for g in groups if len({c.value for c in g}) > 1]
    claims = [c for group in conflicting if len(group) <= MAX_LLM_NODES for c in group]
    trace["llm_skipped_claims"] = sum(len(g) for g in conflicting) - len(claims)  # groups too large to ask about
    trace["llm_skipped_unanimous"] = sum(len(g) for g in groups) - sum(len(g) for g in conflicting)
    trace["llm_requests"] = len(claims)
    if not claims:
        return {}
    requests = [
        GenerationRequest(
            question=answering.question,
            prompt=llm_authority_prompt(c.subject, c.attribute, c.raw_value or c.value, names.get(c.source_id, "")),
        )
        for c in claims
    ]
    generations = answering.generate(requests)
    scores: dict[int, float] = {}
    for claim, generation in zip(claims, generations, strict=True):
        try:
            scores[claim.id] = parse_llm_score(generation.text)
        except ValueError:
            continue
    trace["llm_unusable_replies"] = len(claims) - len(scores)  # those claims' authority is history only
    return scores


def _group_trace(match: KeyMatch, group: GroupConfidence) -> JSONObject:
    kept = sum(n.kept for n in group.nodes)
    return {
        "subject": group.subject,
        "attribute": group.attribute,
        "match_score": round(match.score, 6),
        "confidence": round(group.confidence, 6),
        "entropy_agreement": round(group.entropy_agreement, 6),
        "kept": group.kept,
        "isolated": group.isolated,
        "llm_used": group.llm_used,
        "claims": len(group.nodes),
        "kept_claims": kept,
        "pruned_claims": len(group.nodes) - kept,
        "answer": group.answer,
        "answer_share": round(group.answer_share, 6),
    }


def _votes_and_clusters(
    group: GroupConfidence, answer: str, claims: dict[int, ClaimRecord], names: dict[int, str]
) -> tuple[list[SourceVote], list[ClusterInfo]]:
    """One vote per source (its most confident claim); one cluster per value of the voting nodes."""
    voting = {n.claim_id for n in group.voting_nodes}
    mass = group.value_confidence([n for n in group.nodes if n.claim_id in voting])
    chosen = group.group_of(answer)  # values within the mapping's tolerance are one cluster
    order = sorted(mass, key=lambda v: (v != chosen, -mass[v], v))
    cluster_of = {value: i for i, value in enumerate(order)}
    members: dict[str, list[ClaimRecord]] = {v: [] for v in order}
    votes: list[SourceVote] = []
    seen: set[int] = set()
    for node in sorted(group.nodes, key=lambda n: (n.claim_id not in voting, -n.confidence, n.claim_id)):
        if node.source_id in seen:
            continue
        seen.add(node.source_id)
        claim = claims[node.claim_id]
        votes_for = node.claim_id in voting
        if votes_for:
            members[node.key].append(claim)
        votes.append(
            SourceVote(
                source_id=node.source_id,
                source_name=names.get(node.source_id, f"source {node.source_id}"),
                raw_response=claim.raw_value or claim.value,
                response=claim.raw_value or claim.value if votes_for else IDK,
                filtered=not votes_for,
                align_score=node.consistency,
                cluster=cluster_of[node.key] if votes_for else None,
                weight=node.confidence,
                passages=[],
            )
        )
    clusters = [
        ClusterInfo(
            id=cluster_of[value],
            label=_display(members[value]),
            members=list(dict.fromkeys(c.source_id for c in members[value])),
            weight=mass[value],
        )
        for value in order
        if members[value]
    ]
    return votes, clusters


def _claim_evidence(group: GroupConfidence, value: str, voting: set[int], match: KeyMatch) -> list[Evidence]:
    """The group's claims as evidence, the claims behind the answer first (then by confidence)."""
    distance = max(0.0, 1.0 - min(match.score, 1.0))
    chosen = group.group_of(value)
    return [
        Evidence(
            chunk_id=NO_CHUNK,
            source_id=n.source_id,
            document_id=None,
            distance=distance,
            used=n.claim_id in voting and n.key == chosen,
            credibility=min(1.0, max(0.0, n.confidence / 2.0)),
            claim_id=n.claim_id,
        )
        for n in sorted(group.nodes, key=lambda n: (not (n.claim_id in voting and n.key == chosen), -n.confidence))
    ]


def _graph(
    store: ClaimStore,
    subjects: Sequence[str],
    scored: Sequence[GroupConfidence],
    source_ids: list[int],
    names: dict[int, str],
    answer_confidence: float,
) -> AnswerGraph:
    """Claim nodes (the scored groups first, then other claims about the matched subjects) and
    the line graph among them, at most MAX_GRAPH_NODES nodes."""
    confidence = {n.claim_id: n.confidence / 2.0 for g in scored for n in g.nodes}  # C(v) in [0, 2] -> [0, 1]
    ranked = {n.claim_id: i for g in scored for i, n in enumerate(sorted(g.nodes, key=lambda n: -n.confidence))}
    claims: dict[int, ClaimRecord] = {}
    for subject in subjects:
        for claim in store.about(subject, source_ids):
            claims.setdefault(claim.id, claim)
    group_rank = {n.claim_id: gi for gi, g in enumerate(scored) for n in g.nodes}
    chosen = sorted(
        claims.values(),
        key=lambda c: (group_rank.get(c.id, len(scored)), ranked.get(c.id, 0), c.id),
    )[:MAX_GRAPH_NODES]
    graph = line_graph(chosen)
    nodes = tuple(
        GraphNode(
            id=f"claim:{c.id}",
            kind="claim",
            label=f"{names.get(c.source_id, f'source {c.source_id}')}: {c.raw_value or c.value}",
            source_id=c.source_id,
            confidence=min(1.0, max(0.0, confidence[c.id])) if c.id in confidence else None,
        )
        for c in graph.nodes
    )
    edges = tuple(GraphEdge(f"claim:{a}", f"claim:{b}", "shares-entity") for a, b, _ in graph.edges)
    return AnswerGraph(nodes=nodes, edges=edges, confidence=min(1.0, max(0.0, answer_confidence)))


@register("multirag")
class MultiRagStrategy(AnswerStrategy[MultiRagParams]):
    description = (
        "MultiRAG over claims: match the question to subjects and attributes, score each homologous group "
        "(graph- and node-level confidence), prune, answer with the resolved value"
    )
    requires = frozenset({Requirement.CLAIMS})
    product = True
    Params = MultiRagParams

    def answer(self, question: str, ctx: EngineContext, params: MultiRagParams) -> StrategyResult:
        answering = self.begin(question, ctx)
        store = ctx.claims
        if store is None:  # the registry checks Requirement.CLAIMS before a strategy is asked
            raise RuntimeError("multirag needs a claim store; this context has none")
        thresholds = {"node": params.node_threshold, "graph": params.graph_threshold}
        trace: dict[str, object] = {"thresholds": thresholds, "alpha": params.alpha, "beta": params.beta}
        pool = ctx.claim_sources or ctx.sources
        source_ids = [s.id for s in pool]
        names = {s.id: s.name for s in pool}

        items = self.match_items(answering, store, source_ids, params, trace)
        if not items:
            return answering.result(
                IDK,
                0.0,
                notes=[
                    "No subject or attribute of the claims matches this question closely enough: "
                    "name the entity (a flight number, an ISBN, ...) as the claims spell it.",
                ],
                trace=trace,
            )
        notes: list[str] = []
        scored = self.score_items(answering, items, pool, names, params, trace)
        chosen = self.prune(items, scored, params, notes, trace)
        answer_group, match = scored[chosen], items[chosen][0]
        claims = {c.id: c for c in items[chosen][1]}
        value, confidence, behind = self.elect(answer_group, claims, pool, names, params, notes)
        voting = {n.claim_id for n in answer_group.voting_nodes}
        notes.insert(0, _provenance(answer_group.subject, answer_group.attribute, behind, pool, names))
        votes, clusters = _votes_and_clusters(answer_group, value, claims, names)
        subjects = list(dict.fromkeys(m.subject for m, _ in items))
        trace.update(
            {
                "answer_item": {"subject": answer_group.subject, "attribute": answer_group.attribute},
                "answer_value": value,
                "answer_share": round(confidence, 6),
                "vote": params.vote,
                "pruned_claims": sum(not n.kept for n in answer_group.nodes),
                "llm_used": answer_group.llm_used,
            }
        )
        return answering.result(
            _display(behind),
            float(min(1.0, max(0.0, confidence))),
            votes=votes,
            clusters=clusters,
            evidence=_claim_evidence(answer_group, value, voting, match),
            graph=_graph(store, subjects, scored, source_ids, names, answer_group.confidence),
            notes=notes,
            trace=trace,
        )

    @staticmethod
    def match_items(
        answering: Answering, store: ClaimStore, source_ids: list[int], params: MultiRagParams, trace: dict[str, object]
    ) -> list[tuple[KeyMatch, list[ClaimRecord]]]:
        """Step 1: the items (subject, attribute) the question matches closely enough, best
        first, each with its homologous group (the claims of ``source_ids``); items without
        claims are dropped."""
        vector = answering.ctx.embedder.encode([answering.question])[0]
        matches = [
            m for m in store.match_keys(answering.question, vector, params.max_items) if m.score >= params.min_match
        ]
        trace["matched"] = [
            {"subject": m.subject, "attribute": m.attribute, "score": round(m.score, 6)} for m in matches
        ]
        return [
            (m, group)
            for m in matches[: params.max_items]
            if (group := store.group(m.subject, m.attribute, source_ids))
        ]

    @staticmethod
    def score_items(
        answering: Answering,
        items: Sequence[tuple[KeyMatch, list[ClaimRecord]]],
        pool: Sequence[SourceInfo],
        names: dict[int, str],
        params: MultiRagParams,
        trace: dict[str, object],
    ) -> list[GroupConfidence]:
        """Step 2: each group's graph- and node-level confidence, with the sources' historical
        authority and, when the generator writes free text, the LLM's authority judgement."""
        llm_scores: dict[int, float] = {}
        if Capability.FREE_TEXT in answering.ctx.generator.capabilities:
            llm_scores = _llm_scores(answering, [g for _, g in items], names, trace)
        reliability = {s.id: s.accuracy for s in pool}
        history = {s.id: s.answers_count for s in pool}
        scored = [
            score_group(
                group,
                reliability,
                history=history,
                llm_scores=llm_scores,
                alpha=params.alpha,
                beta=params.beta,
                node_threshold=params.node_threshold,
                graph_threshold=params.graph_threshold,
            )
            for _, group in items
        ]
        trace["groups"] = [_group_trace(m, g) for (m, _), g in zip(items, scored, strict=True)]
        return scored

    @staticmethod
    def prune(
        items: Sequence[tuple[KeyMatch, list[ClaimRecord]]],
        scored: Sequence[GroupConfidence],
        params: MultiRagParams,
        notes: list[str],
        trace: dict[str, object],
    ) -> int:
        """Step 3: the index of the item that answers: the first one as relevant as the best
        match (RELEVANCE_TIE) whose group survives pruning, else the best match (low confidence)."""
        # Candidates: the items as relevant as the best one. A less relevant item is context
        # (trace, graph), never the answer: pruning a contested group must not turn a question
        # about one attribute into an answer about another.
        top = items[0][0].score
        candidates = [i for i, (m, _) in enumerate(items) if m.score >= top - RELEVANCE_TIE]
        surviving = [i for i in candidates if scored[i].kept]
        trace["pruned_groups"] = sum(not g.kept for g in scored)
        if surviving:
            chosen = surviving[0]
            if chosen > 0:
                top_group = scored[0]
                notes.append(
                    f"An equally matching item ({top_group.subject} / {top_group.attribute}) was pruned: its sources "
                    f"agree too little (graph confidence {top_group.confidence:.2f} < {params.graph_threshold:.2f})."
                )
            return chosen
        notes.append(
            f"Low confidence: the sources disagree on {scored[0].subject} / {scored[0].attribute} "
            f"(graph confidence {scored[0].confidence:.2f}, below the threshold {params.graph_threshold:.2f})."
        )
        return 0

    @staticmethod
    def elect(
        group: GroupConfidence,
        claims: dict[int, ClaimRecord],
        pool: Sequence[SourceInfo],
        names: dict[int, str],
        params: MultiRagParams,
        notes: list[str],
    ) -> tuple[str, float, list[ClaimRecord]]:
        """Step 4: the value the kept claims elect (``vote``), its confidence (capped for an
        uncorroborated claim and for unchecked sources) and the claims behind it."""
        if params.vote == "weight":
            value, confidence = group.weighted_answer({s.id: s.weight for s in pool})
        else:
            value, confidence = group.answer, group.answer_share
        voting = {n.claim_id for n in group.voting_nodes}
        chosen = group.group_of(value)  # values within the mapping's tolerance back it too
        behind = [claims[n.claim_id] for n in group.nodes if n.claim_id in voting and n.key == chosen]
        behind.sort(key=lambda c: c.value != value)  # the elected spelling's claims first (stable)
        if group.isolated:
            confidence = min(confidence, ISOLATED_CAP)
            notes.append(
                f"Only one source states this ({names.get(behind[0].source_id, behind[0].source_id)}): nothing "
                f"corroborates or contradicts it, so its confidence is capped at {ISOLATED_CAP:.2f}."
            )
        if not any(n.kept for n in group.nodes):
            notes.append(
                f"No claim reached the node threshold ({params.node_threshold:.2f}); every claim of the group voted."
            )
        confidence, caveat = evidence_caveat(confidence, [c.source_id for c in behind], pool)
        if caveat:
            notes.append(caveat)
        return value, confidence, behind
