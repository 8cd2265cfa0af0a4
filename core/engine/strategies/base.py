"""The answer-strategy contract: what a strategy needs, what it takes, what it returns.

A strategy turns a question into a :class:`StrategyResult` using the engine context
(retriever, embedder, generator, NLI, sources) and its own typed parameters. It declares:

- ``requires``: the :class:`Requirement` set the configured backends must offer (an LLM
  that writes free text, white-box token scores, a claim store, oracle reliabilities). The
  product hides or refuses, with :func:`missing_requirements`' message, what it cannot run.
- ``Params``: a frozen dataclass of its parameters (core.engine.params), validated at the
  edge with ``parse_params`` instead of one shared bag. The base is generic over it:
  ``class RaRag(AnswerStrategy[RaRagParams])`` checks that ``Params`` and ``answer``'s
  ``params`` agree. A caller holding a strategy by name (the registry's :class:`Strategy`,
  whose parameter type it cannot name) answers through :meth:`Strategy.answer_checked`.

The result carries per-source votes and answer clusters (RA-RAG family), per-document
evidence with credibility and provenance (the chunks read), an optional graph (claims,
conflicts), notes for the reader and a trace of how the answer was reached.
Registration lives in core.engine.strategies.registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Generic, TypeVar

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest, Generator
from core.engine.backends.nli import NLI
from core.engine.claims.store import ClaimStore
from core.engine.params import NoParams, ParamSet
from core.engine.steps.calibration import IDENTITY, Calibration
from core.engine.topics import TopicModel
from core.engine.types import CallStats, Embedder, Passage, Retriever, SourceInfo, Vector
from core.engine.types import JSONValue as JSONValue  # re-exported (its home is core.engine.types)


class Requirement(StrEnum):
    FREE_TEXT = "free-text"  # a generator that writes free text (an LLM), not a span reader
    TOKEN_SCORES = "token-scores"  # white-box token log-probabilities (core.engine.backends.generation.TokenScorer)
    CLAIMS = "claims"  # a claim store (structured and semi-structured sources as claims)
    ORACLE = "oracle"  # the true source reliabilities: benchmark only, never in the product


REQUIREMENT_HELP: dict[Requirement, str] = {
    Requirement.FREE_TEXT: "a language model that writes free text (GENERATOR_BACKEND=openai or transformers); "
    "the offline extractive reader only copies spans of passages",
    Requirement.TOKEN_SCORES: "a local model with token-level (white-box) access",
    Requirement.CLAIMS: "a claim store built from structured or semi-structured sources",
    Requirement.ORACLE: "the true reliabilities of the sources, which only the benchmark knows",
}


@dataclass
class EstimationParams:
    """Retrieval and filtering settings of reliability *estimation* (core.engine.estimation).

    Strategies do not read these: each takes its own Params (see ``AnswerStrategy.Params``).
    """

    k: int = 3  # passages per source
    tau: float = 0.1  # f_align threshold
    strict_clustering: bool = False
    # A passage less similar to its query than this (cosine), holding under half of its words,
    # is not read (core.engine.steps.relevance; 0 reads every retrieved passage)
    min_relevance: float = 0.4


class SourceState(StrEnum):
    """Where one source stands while a question is answered (reported through
    ``EngineContext.report``; the product shows it live while the ask runs)."""

    WAITING = "waiting"  # in the list, not asked yet
    ASKING = "asking"  # its passages are with the generator
    ANSWERED = "answered"  # gave an answer its passages support
    ABSTAINED = "abstained"  # said "I don't know"
    FILTERED = "filtered"  # answered, but its passages did not support it: counted as "I don't know"
    SKIPPED = "skipped"  # never asked (kappa-RRSS found enough answers first)


@dataclass(frozen=True)
class SourceEvent:
    """One source's new state; ``response`` is its (filtered) answer once it has one."""

    source_id: int
    source_name: str
    state: SourceState
    response: str = ""


SourceListener = Callable[[Sequence[SourceEvent]], None]


@dataclass
class EngineContext:
    """The backends and sources a strategy runs with (built per question or batch)."""

    retriever: Retriever
    embedder: Embedder
    generator: Generator
    nli: NLI
    sources: list[SourceInfo]
    params: EstimationParams = field(default_factory=EstimationParams)
    oracle: Mapping[int, float] | None = None  # true accuracies by source id (benchmark only)
    claims: ClaimStore | None = None  # the claim store, when the product has claims
    # The sources that hold claims (claim strategies read these; a source loaded from
    # structured data has claims but no passages, so it is not among ``sources``). Empty:
    # use ``sources``.
    claim_sources: list[SourceInfo] = field(default_factory=list)
    # Told of each batch of per-source progress (SourceEvent) while a strategy runs; None:
    # nobody listens. Strategies that ask the sources one by one report; others need not.
    listener: SourceListener | None = None
    # How the latest estimation's checked answers say answer probabilities relate to being
    # right (core.engine.steps.calibration); the identity when nothing was checked.
    calibration: Calibration = IDENTITY
    # How the estimator that gave the sources' weights turns accuracies into weights
    # ("paper" or "log-odds", core.engine.reliability.weights): a log-odds estimate weighs a
    # vote by the question's number of candidate answers too (pipeline.cluster_and_vote).
    weight_scheme: str = "paper"
    # The latest run's topics (core.engine.topics): a question is weighed by its topics'
    # reliabilities (SourceInfo.topic_accuracy); None: one reliability per source.
    topics: TopicModel | None = None
    # The latest estimation's copy groups (core.engine.steps.dependence): sources found copying
    # or colluding with each other, each group counted once when it gives one answer. Empty:
    # every source is independent.
    copy_groups: tuple[frozenset[int], ...] = ()
    # Per topic of ``topics`` (in its order), the copy groups found on that topic's queries
    # alone: a bloc that colludes on one subject answers independently on the others, where
    # counting it once would silence honest answers. Empty: ``copy_groups`` on every question.
    topic_copy_groups: tuple[tuple[frozenset[int], ...], ...] = ()

    def report(self, events: Sequence[SourceEvent]) -> None:
        """Pass per-source progress to the listener, if any (one call per batch)."""
        if self.listener is not None and events:
            self.listener(list(events))

    def offers(self) -> frozenset[Requirement]:
        """What this context can give a strategy."""
        return offers_of(self.generator, claims=self.claims is not None, oracle=self.oracle is not None)


def offers_of(generator: Generator, *, claims: bool = False, oracle: bool = False) -> frozenset[Requirement]:
    """The requirements a generator (plus a claim store, plus oracle reliabilities) meets."""
    have = set()
    if Capability.FREE_TEXT in generator.capabilities:
        have.add(Requirement.FREE_TEXT)
    if Capability.TOKEN_SCORES in generator.capabilities:
        have.add(Requirement.TOKEN_SCORES)
    if claims:
        have.add(Requirement.CLAIMS)
    if oracle:
        have.add(Requirement.ORACLE)
    return frozenset(have)


@dataclass
class SourceVote:
    source_id: int
    source_name: str
    raw_response: str
    response: str  # after f_align (IDK when filtered)
    filtered: bool
    align_score: float
    cluster: int | None
    weight: float  # the voting weight v_i the vote carried
    passages: list[Passage]
    # What a strategy multiplied the source's weight by for this vote (CrEst's credibility of
    # the passages it read, in ra-rag-crest); ``weight`` already includes it.
    factor: float = 1.0
    # Which backend wrote raw_response ("" when no generator was asked: no passage about the
    # question); the extractive reader's where it replaced a local model's non-answer.
    backend: str = ""


@dataclass
class ClusterInfo:
    id: int
    label: str  # representative answer
    members: list[int]  # source ids
    weight: float


NO_CHUNK = 0  # the chunk_id of evidence that is not a chunk (a claim: see Evidence.claim_id)


@dataclass(frozen=True)
class Evidence:
    """One retrieved chunk (or claim) as evidence for the answer, with its provenance.

    Claim-based strategies (multirag) cite claims: ``claim_id`` is set and ``chunk_id`` is
    NO_CHUNK; such evidence is not a chunk read, so ``StrategyResult.chunk_ids`` skips it."""

    chunk_id: int
    source_id: int
    document_id: int | None
    distance: float  # cosine distance to the question
    used: bool  # the answer rests on it (read by a source in the winning cluster, or in the prompt)
    credibility: float | None = None  # per-document credibility in [0, 1], when the strategy estimates it
    claim_id: int | None = None  # the claim this evidence is, for claim-based strategies


@dataclass(frozen=True)
class GraphNode:
    id: str
    kind: str  # e.g. "claim", "entity", "source", "answer"
    label: str
    source_id: int | None = None
    confidence: float | None = None


@dataclass(frozen=True)
class GraphEdge:
    a: str  # node ids
    b: str
    kind: str  # e.g. "shares-entity", "conflicts", "supports"
    weight: float = 1.0


@dataclass(frozen=True)
class AnswerGraph:
    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()
    confidence: float | None = None  # graph-level confidence, when the strategy computes one


@dataclass
class StrategyResult:
    answer: str
    confidence: float
    strategy: str
    backend: str
    votes: list[SourceVote] = field(default_factory=list)
    clusters: list[ClusterInfo] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    graph: AnswerGraph | None = None
    notes: list[str] = field(default_factory=list)  # plain-language remarks for the reader
    # How the answer was reached (visit order, keywords): any values; stored through
    # codec.jsonable, which makes them plain JSON.
    trace: dict[str, object] = field(default_factory=dict)
    stats: CallStats = field(default_factory=CallStats)

    @property
    def chunk_ids(self) -> list[int]:
        """Every chunk the strategy read, in first-read order."""
        return list(dict.fromkeys(e.chunk_id for e in self.evidence if e.claim_id is None))


def record(stats: CallStats, generations: Sequence[Generation]) -> None:
    """Count generator calls and their tokens in ``stats``."""
    stats.calls += len(generations)
    stats.prompt_tokens += sum(g.prompt_tokens for g in generations)
    stats.completion_tokens += sum(g.completion_tokens for g in generations)


@dataclass
class Answering:
    """One question being answered by one strategy: the steps every strategy takes the same
    way. Generator calls go through :meth:`generate`, which counts them in ``stats``;
    :meth:`pooled_passages` is the pooled retrieval of vanilla-rag, Astute RAG and CrEst;
    :meth:`result` fills the fields every result carries (the strategy, the backend, the
    call statistics). Strategies do not time themselves: the caller times ``answer``."""

    strategy: str
    question: str
    ctx: EngineContext
    stats: CallStats = field(default_factory=CallStats)
    # The question's embedding, encoded once for this answer (question_vector): the topics
    # it is weighed under and every search read the same vector.
    vector: Vector | None = None

    def question_vector(self) -> Vector:
        """The question's embedding (encoded on first use, then kept)."""
        if self.vector is None:
            self.vector = self.ctx.embedder.encode([self.question])[0]
        return self.vector

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """One batched generator call, counted."""
        generations = self.ctx.generator.generate(requests)
        record(self.stats, generations)
        return generations

    def pooled_passages(self, k: int) -> list[Passage]:
        """The question's k nearest passages over all sources together (one encoding, one search)."""
        return self.ctx.retriever.top_k_pooled(self.question_vector(), k)

    def result(
        self,
        answer: str,
        confidence: float,
        *,
        votes: list[SourceVote] | None = None,
        clusters: list[ClusterInfo] | None = None,
        evidence: list[Evidence] | None = None,
        graph: AnswerGraph | None = None,
        notes: list[str] | None = None,
        trace: Mapping[str, object] | None = None,
    ) -> StrategyResult:
        return StrategyResult(
            answer=answer,
            confidence=confidence,
            strategy=self.strategy,
            backend=self.ctx.generator.name,
            votes=votes if votes is not None else [],
            clusters=clusters if clusters is not None else [],
            evidence=evidence if evidence is not None else [],
            graph=graph,
            notes=notes if notes is not None else [],
            trace=dict(trace) if trace is not None else {},
            stats=self.stats,
        )


# A strategy's parameter type: each strategy names its ParamSet (``AnswerStrategy[PooledParams]``),
# so mypy checks its ``answer`` against it.
P = TypeVar("P", bound=ParamSet)


class Strategy(ABC):
    """A strategy as the registry hands it out: its parameter type unnamed. Read its
    ``Params`` to parse parameters, answer with :meth:`answer_checked`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[frozenset[Requirement]] = frozenset()
    # Meant for users (the ask form lists it by default); False: a research baseline or
    # ablation, offered behind the form's "advanced" switch. Not inherited on purpose by
    # ablations: each subclass that is a product strategy says so itself.
    product: ClassVar[bool] = False
    uses_sources: ClassVar[bool] = (
        True  # False: answers without retrieval (nothing to say when no source holds documents)
    )
    # The fewest sources it can answer from when a user limits the sources it may read
    # (the product refuses a narrower choice, naming the field).
    min_sources: ClassVar[int] = 1
    Params: type[ParamSet] = NoParams

    @abstractmethod
    def answer_checked(self, question: str, ctx: EngineContext, params: ParamSet) -> StrategyResult:
        """Answer ``question`` with ``params``, which must be an instance of ``self.Params``."""


class AnswerStrategy(Strategy, Generic[P]):
    """Subclass as ``AnswerStrategy[MyParams]``, set ``description``, ``requires`` and
    ``Params = MyParams``, implement ``answer`` (usually opening with
    ``answering = self.begin(question, ctx)``: see :class:`Answering`)."""

    Params: type[P]

    @abstractmethod
    def answer(self, question: str, ctx: EngineContext, params: P) -> StrategyResult:
        """Answer ``question``; ``params`` is an instance of ``self.Params``."""

    def answer_checked(self, question: str, ctx: EngineContext, params: ParamSet) -> StrategyResult:
        if not isinstance(params, self.Params):
            raise TypeError(f"{self.name} takes {self.Params.__name__}, not {type(params).__name__}")
        return self.answer(question, ctx, params)

    def begin(self, question: str, ctx: EngineContext) -> Answering:
        """The shared state and steps of one answer (call statistics, pooled retrieval, the result)."""
        return Answering(self.name, question, ctx)


def missing_requirements(strategy: Strategy | type[Strategy], offers: frozenset[Requirement]) -> list[str]:
    """Plain-language reasons the strategy cannot run with what is offered (empty: it can)."""
    return [
        f"{strategy.name} needs {REQUIREMENT_HELP[r]}."
        for r in sorted(strategy.requires - offers, key=lambda r: r.value)
    ]


class StrategyUnavailable(RuntimeError):
    """The configured backends cannot run the strategy (message says why)."""


def ensure_runnable(strategy: Strategy, ctx: EngineContext) -> None:
    reasons = missing_requirements(strategy, ctx.offers())
    if reasons:
        raise StrategyUnavailable(" ".join(reasons))
