"""Question answering over a simulated multi-source corpus: every method side by side.

One seed: build the sources and their corpus, embed it (cached), estimate reliabilities by
IWMV (or another registered estimator, ``QAConfig.estimator``) over the estimation queries
(the engine's ``core.engine.estimation``), then answer every test
question with every method. Methods are the engine's registered strategies (so a strategy
added later shows up here without edits) plus two crowd-kit aggregators, DawidSkene and
Wawa, fed with the same per-source answers that MV votes on.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.bench.attribution import attribute, ceiling, ceilings
from core.bench.corpus import Corpus, CorpusDoc, build_corpus, make_sources
from core.bench.crowd import dawid_skene_probas, wawa_fit_predict
from core.bench.datasets import BenchQuestion
from core.bench.metrics import correlations
from core.engine.estimation import calibration_from_records
from core.engine.params import parse_assignments
from core.engine.reliability import DEFAULT_ESTIMATOR, get_estimator
from core.engine.reliability.base import MIN_SHARED_FALSE
from core.engine.strategies.base import Requirement, StrategyResult
from core.engine.text import IDK, answer_contains_gold, is_idk
from core.engine.types import Embedder, JSONObject, JSONValue, Passage, SourceInfo

if TYPE_CHECKING:
    from core.engine.backends.generation.base import Generation, GenerationRequest, Generator
    from core.engine.backends.nli import NLI, Probs
    from core.engine.steps.memory_retriever import InMemoryRetriever
    from core.engine.strategies import EngineContext

CROWD_METHODS = ("dawid-skene", "wawa")
CROWD_BASE = "mv"  # the strategy whose per-source votes the crowd-kit methods aggregate
# The benchmark answers with the offline extractive reader and knows the true reliabilities.
BENCH_OFFERS = frozenset({Requirement.ORACLE})
LLM_BENCH_OFFERS = frozenset({Requirement.ORACLE, Requirement.FREE_TEXT, Requirement.TOKEN_SCORES})


@dataclass
class QAConfig:
    dataset: str = "poisonedrag"
    prior: str = "adversary-hammer"
    sources: int = 9
    adversaries: int = 5
    coverage: float = 0.6
    kappa: int = 4
    tau: float = 0.1
    k: int = 3
    min_relevance: float = 0.4  # core.engine.steps.relevance (0: every retrieved passage is read)
    estimation_queries: int = 100
    estimator: str = DEFAULT_ESTIMATOR  # a name in core.engine.reliability.available_estimators()
    gold_queries: int = 0  # how many estimation queries carry their reference answer (anchors)
    # Active gold: the product's own selection (core.engine.reliability.identify.proposed_checks)
    # chooses this many estimation queries after an unsupervised estimate, and only those get
    # their reference answers; the estimate is then redone with them (no new generation).
    active_gold: int = 0
    # One check at a time, as a curator answers them in the product (record_check re-estimates
    # the run, which proposes again): the estimate is redone after each and the next check is
    # chosen from it. False: all ``active_gold`` checks chosen from the unsupervised estimate.
    checks_one_at_a_time: bool = False
    # With gold: fit the answer calibration on the checked estimation queries, as the product
    # does after a run with checks (core.engine.steps.calibration); False keeps the raw probability.
    calibrate: bool = True
    collude: bool = False  # the paper: each misinformation source draws its own wrong answer
    max_questions: int | None = None
    memo: bool = True  # share reader and NLI outputs between methods (faster; see docs)
    methods: list[str] | None = None  # None: every registered strategy + crowd-kit
    # "reader": the offline extractive reader; otherwise the key of a known local GGUF model
    # (core.engine.backends.generation.gguf_files.MODELS), run in-process by ``llm_runtime``.
    generator: str = "reader"
    llm_runtime: str = "ctranslate2"  # "ctranslate2" (the product's local runtime) or "transformers"
    llm_cache_dir: str | None = None  # on-disk generation cache for a local model (resumable runs)
    models_dir: str | None = None  # where the local model is assembled (default var/models)
    llm_dtype: str = "auto"  # the local model's weights (TransformersGenerator dtype)
    # A local model's answers held to their passages (GroundedGenerator), as the product does
    grounded: bool = True
    unsupported: str = "reader"  # GroundedGenerator: an answer its passages lack becomes "reader" or "abstain"
    data_dir: str = ""  # the reference data (the demo data set is checked against it)
    topics: bool = True  # estimate per-topic reliabilities too (ra-rag weighs by them; ra-rag-global does not)
    topic_tags: bool = False  # the estimation queries carry their true topic as a curator's tag

    def resolved_methods(self) -> list[str]:
        from core.engine.strategies import available_strategies, runnable_strategies

        registered = available_strategies()
        if self.methods is None:
            if self.generator != "reader":
                return [*runnable_strategies(LLM_BENCH_OFFERS), *CROWD_METHODS]
            # What the benchmark's offline reader (plus the oracle) can run: a strategy that
            # needs an LLM writing free text (vanilla-llm) is left out.
            return [*runnable_strategies(BENCH_OFFERS), *CROWD_METHODS]
        unknown = [m for m in self.methods if method_spec(m)[0] not in registered and m not in CROWD_METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; available: {[*registered, *CROWD_METHODS]}")
        from core.engine.params import ParamError, parse_params
        from core.engine.strategies import get_strategy

        seen: dict[tuple[str, tuple[tuple[str, JSONValue], ...]], str] = {}
        for method in self.methods:
            name, overrides = method_spec(method)
            if overrides:
                try:
                    parse_params(get_strategy(name).Params, overrides)
                except ParamError as exc:
                    raise ValueError(f"method {method!r}: {exc}") from exc
            key = (name, tuple(sorted(overrides.items())))
            if key in seen:
                raise ValueError(f"method {method!r} is given twice (as {seen[key]!r}): each method runs once")
            seen[key] = method
        return list(self.methods)


def method_spec(method: str) -> tuple[str, dict[str, JSONValue]]:
    """A method as the benchmark names it: a strategy's name, optionally with parameters after
    a colon ("astute-rag:prompt=compact,t=0"), which override the benchmark's defaults for it.
    The whole spelling names the method in the results, so variants sit side by side."""
    name, colon, rest = method.partition(":")
    if colon and not rest.strip():
        raise ValueError(f"method {method!r}: no parameters after the colon (write {name!r} for its defaults)")
    try:
        overrides = parse_assignments(p.strip() for p in rest.split(",") if p.strip())
    except ValueError as exc:
        raise ValueError(f"method {method!r}: parameters are written key=value, separated by commas") from exc
    return name, overrides


@dataclass
class MethodRun:
    correct: list[bool] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)  # one per answer, when the method gives one
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    answers: list[str] = field(default_factory=list)
    # Per test question, the stage that lost a wrong answer (None: right; core.bench.attribution)
    stages: list[str | None] = field(default_factory=list)
    warned: list[bool] = field(default_factory=list)  # per test question: the answer carries a note
    # Questions from outside the corpus (the demo): how many were asked, and how many got
    # "I don't know" or an answer with a warning
    outside: int = 0
    outside_abstained_or_warned: int = 0
    # Each wrong answer with what lost it: the question, the gold, the answer, its stage, its
    # confidence and notes, and every source's vote (what it wrote, what the filter kept, the
    # passages it read and whether they were the question's factual ones): the record behind
    # the ``lost_at`` counts, to read one case at a time
    wrong: list[dict[str, JSONValue]] = field(default_factory=list)


@dataclass
class SeedRun:
    seed: int
    methods: dict[str, MethodRun]
    true_reliability: dict[int, float]
    estimated_accuracy: dict[int, float]  # w_i of the configured estimator (the product's default unless set)
    estimated_weight: dict[int, float]  # v_i
    answers_count: dict[int, int]
    estimation_calls: int
    estimation_seconds: float
    n_test: int
    n_documents: int
    flagged_pairs: list[tuple[int, int]] = field(default_factory=list)  # dependence >= 0.5
    # What the product shows as copying: flagged pairs with a false answer in common, of an
    # identified estimate (core.services.pages.copying)
    shown_pairs: list[tuple[int, int]] = field(default_factory=list)
    colluding_pairs: list[tuple[int, int]] = field(default_factory=list)  # the truth, with --collude
    identified: bool = True  # whether agreement identified the estimate (core.engine.reliability.identify)
    gold_used: int = 0  # estimation queries that carried their reference answer (random and active)
    calibration: JSONObject = field(default_factory=dict)  # the fitted map (empty: none)
    ceilings: dict[str, float] = field(default_factory=dict)  # core.bench.attribution.ceilings
    # (estimated, true) accuracy per source x true topic (topic_reliability_cells)
    topic_cells: list[tuple[int, str, float, float]] = field(default_factory=list)
    topics: list[dict[str, object]] = field(default_factory=list)  # the topics the run found
    # The same cells with each test question's topics as ra-rag weighed its vote, after reading
    # its sources' answers (steps.topic_weights.answer_share); empty: ra-rag not run.
    topic_cells_answers: list[tuple[int, str, float, float]] = field(default_factory=list)

    @property
    def topic_correlation(self) -> dict[str, float]:
        return correlations([c[2] for c in self.topic_cells], [c[3] for c in self.topic_cells])

    @property
    def topic_correlation_answers(self) -> dict[str, float]:
        cells = self.topic_cells_answers
        return correlations([c[2] for c in cells], [c[3] for c in cells])

    @property
    def reliability_correlation(self) -> dict[str, float]:
        ids = sorted(self.true_reliability)
        return correlations([self.estimated_accuracy[i] for i in ids], [self.true_reliability[i] for i in ids])


class MemoNLI:
    """NLI with a per-pair memo: the strategies of one run judge the same (premise,
    hypothesis) pairs over and over; a deterministic model gives the same answer each time."""

    def __init__(self, inner: NLI) -> None:
        self.inner = inner
        self.name = inner.name
        self.requires_answer_grounding = getattr(inner, "requires_answer_grounding", False)
        self._memo: dict[tuple[str, str], Probs] = {}

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[Probs]:
        missing = list(dict.fromkeys(p for p in pairs if p not in self._memo))
        if missing:
            self._memo.update(zip(missing, self.inner.predict(missing), strict=True))
        return [self._memo[p] for p in pairs]


class MemoGenerator:
    """A deterministic generator with a memo per request. The strategies still count every
    call and its tokens from the returned Generation, so cost metrics are unchanged."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities
        self._memo: dict[tuple[str, tuple[str, ...], str | None], Generation] = {}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        keys = [(r.question, tuple(r.passages), r.prompt) for r in requests]
        missing = {k: r for k, r in zip(keys, requests, strict=True) if k not in self._memo}
        if missing:
            self._memo.update(zip(missing, self.inner.generate(list(missing.values())), strict=True))
        return [self._memo[k] for k in keys]


# Kept across seeds and sweep points of one process: generators by key, NLIs by embedder.
_MEMO: dict[str, Generator] = {}
_NLI_MEMO: dict[str, NLI] = {}


def bench_generator(config: QAConfig) -> Generator:
    """The run's generator: the offline reader (memoised in memory when ``config.memo``), or
    a local model behind the on-disk generation cache (one model load per process)."""
    from core.engine.backends.generation.extractive import ExtractiveReader

    if config.generator == "reader":
        reader = ExtractiveReader()
        return _MEMO.setdefault("gen:reader", MemoGenerator(reader)) if config.memo else reader
    key = f"llm:{config.generator}:{config.llm_runtime}:{config.llm_dtype}:{config.llm_cache_dir}"
    if key not in _MEMO:
        from pathlib import Path

        from core.bench.llm_cache import cached_generator
        from core.bench.paths import default_cache_dir
        from core.engine.backends.generation import CTranslate2Generator, TransformersGenerator

        models_dir = Path(config.models_dir or "var/models")
        # The cache keys carry the generator's name ("ctranslate2:..." or "transformers:..."),
        # so the two runtimes' answers never mix.
        inner: Generator = (
            CTranslate2Generator(config.generator, models_dir=models_dir)
            if config.llm_runtime == "ctranslate2"
            else TransformersGenerator(config.generator, models_dir=models_dir, dtype=config.llm_dtype)
        )
        cache_dir = Path(config.llm_cache_dir) if config.llm_cache_dir else default_cache_dir() / "llm"
        _MEMO[key] = cached_generator(inner, cache_dir)
    if config.grounded:
        from core.engine.backends.generation.grounded import GroundedGenerator

        return GroundedGenerator(_MEMO[key], unsupported=config.unsupported)
    return _MEMO[key]


def build_retriever(corpus: Corpus, embedder: Embedder) -> InMemoryRetriever:
    from core.engine.steps.memory_retriever import InMemoryRetriever

    retriever = InMemoryRetriever()
    passages = [Passage(d.id, d.source_id, d.text, document_id=d.id) for d in corpus.documents]
    retriever.add(passages, embedder.encode([d.text for d in corpus.documents]))
    return retriever


def _crowd_frame(votes_per_task: Sequence[Sequence[tuple[int, str]]]) -> tuple[Any, list[list[str]]]:
    """A (task, worker, label) frame (a pandas DataFrame: pandas has no type stubs here); labels coded per task by descending popularity."""
    import pandas as pd

    rows: list[tuple[int, int, int]] = []
    values: list[list[str]] = []
    for task, votes in enumerate(votes_per_task):
        counts = Counter(answer for _source, answer in votes)
        ordered = sorted(counts, key=lambda a: (-counts[a], a))
        code = {a: i for i, a in enumerate(ordered)}
        values.append(ordered)
        rows.extend((task, source, code[answer]) for source, answer in votes)
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), values


def crowd_answers(votes_per_task: Sequence[Sequence[tuple[int, str]]], method: str) -> list[str]:
    """DawidSkene or Wawa over per-source non-IDK answers; IDK where nobody answered."""
    frame, values = _crowd_frame(votes_per_task)
    answers = [IDK] * len(votes_per_task)
    if frame.empty:
        return answers
    if method == "wawa":
        labels, _skills = wawa_fit_predict(frame)
        for task, code in labels.items():
            answers[int(task)] = values[int(task)][int(code)]
    else:
        probas = dawid_skene_probas(frame)
        for task, row in probas.iterrows():
            allowed = [c for c in row.index if int(c) < len(values[int(task)])]
            answers[int(task)] = values[int(task)][int(row[allowed].idxmax())]
    return answers


def run_seed(config: QAConfig, questions: Sequence[BenchQuestion], embedder: Embedder, seed: int) -> SeedRun:
    from core.engine.backends.nli import EmbeddingLexicalNLI
    from core.engine.estimation import EstimationResult, TopicInput, estimate, estimate_from_records
    from core.engine.params import parse_params
    from core.engine.reliability.identify import proposed_checks
    from core.engine.steps.dependence import groups_from_dependence, topic_copy_groups
    from core.engine.strategies import EngineContext, EstimationParams, ensure_runnable, get_strategy

    methods = config.resolved_methods()
    if config.dataset == "demo":
        from core.bench.demo import load_demo_corpus

        corpus = load_demo_corpus(Path(config.data_dir))
        sources = corpus.sources
    else:
        topics = sorted({q.topic for q in questions})
        sources = make_sources(config.prior, config.sources, config.adversaries, config.coverage, seed, topics)
        corpus = build_corpus(questions, sources, seed, config.estimation_queries, config.collude, config.max_questions)
    documents = {d.id: d for d in corpus.documents}
    retriever = build_retriever(corpus, embedder)
    true = corpus.true_reliability
    params = EstimationParams(k=config.k, tau=config.tau, min_relevance=config.min_relevance)
    defaults = {"kappa": config.kappa, "k": config.k, "tau": config.tau, "min_relevance": config.min_relevance}
    generator = bench_generator(config)
    nli: NLI = EmbeddingLexicalNLI(embedder)
    if config.memo:
        # Outputs depend only on the texts, so the memo is shared by seeds and sweep points.
        nli = _NLI_MEMO.setdefault(f"nli:{embedder.name}", MemoNLI(nli))
    ctx = EngineContext(
        retriever=retriever,
        embedder=embedder,
        generator=generator,
        nli=nli,
        sources=[SourceInfo(s.id, s.name) for s in sources],
        params=params,
        oracle=true,
    )

    # Reliability estimation over the fact-checking queries (the product's default estimator unless set).
    replayed = getattr(generator, "replayed_seconds", 0.0)
    started = time.perf_counter()
    estimation_texts = [corpus.question(q).question for q in corpus.estimation_ids]
    gold = {
        i: list(corpus.question(q).gold) for i, q in enumerate(corpus.estimation_ids[: max(config.gold_queries, 0)])
    }
    # The demo's curated queries carry their subject as a "topic:" tag, which the product reads.
    tagged = config.topic_tags or config.dataset == "demo"
    tags = [corpus.question(q).topic for q in corpus.estimation_ids] if tagged else None
    topic_input = TopicInput(list(embedder.encode(estimation_texts)), tags) if config.topics else None
    estimation = estimate(estimation_texts, ctx, estimator=config.estimator, gold=gold or None, topics=topic_input)
    rounds, per_round = (config.active_gold, 1) if config.checks_one_at_a_time else (1, config.active_gold)
    for _ in range(rounds if config.active_gold > 0 else 0):
        checks = proposed_checks(estimation.reliability, per_round, exclude=gold)
        if not checks:
            break
        gold = {**gold, **{i: list(corpus.question(corpus.estimation_ids[i]).gold) for i in checks}}
        anchored, records = estimate_from_records(
            estimation_texts,
            estimation.source_ids,
            estimation.records,
            ctx.nli,
            ctx.params.strict_clustering,
            estimator=config.estimator,
            gold=gold,
            topics=topic_input,
        )
        estimation = EstimationResult(records, anchored, estimation.source_ids, estimation.stats)
    identification = estimation.reliability.identification
    estimation_seconds = time.perf_counter() - started + getattr(generator, "replayed_seconds", 0.0) - replayed
    weights = estimation.by_source()
    rel = dict(zip(estimation.source_ids, estimation.reliability.sources, strict=True))
    topical = estimation.reliability.topical
    column = {sid: j for j, sid in enumerate(estimation.source_ids)}
    ctx.sources = [
        SourceInfo(
            s.id,
            s.name,
            weight=weights[s.id],
            answers_count=rel[s.id].answers,
            accuracy=rel[s.id].accuracy,
            topic_accuracy=tuple(row[column[s.id]].accuracy for row in topical.cells) if topical else (),
        )
        for s in sources
    ]
    ctx.topics = topical.model if topical else None

    ctx.weight_scheme = get_estimator(config.estimator).weight_scheme
    # The copy groups the product would show (and count once at answer time): an identified
    # estimate's dependent pairs with false answers in common (core.engine.steps.dependence).
    ctx.copy_groups = groups_from_dependence(
        estimation.reliability.dependence,
        estimation.source_ids,
        identified=identification.identified if identification is not None else True,
    )
    # And per topic: the groups found on each topic's queries where its verdict is settled.
    if topical is not None:
        ctx.topic_copy_groups = topic_copy_groups(
            topical.dependence,
            [t not in topical.unsettled() for t in range(len(topical.dependence))],
            estimation.source_ids,
            ctx.copy_groups,
        )
    if config.calibrate and gold:
        ctx.calibration = calibration_from_records(
            estimation.records,
            estimation.source_ids,
            estimation.reliability,
            gold,
            config.kappa,
            seed,
            scheme=ctx.weight_scheme,
        )

    # Estimation-query votes feed the crowd-kit methods too (they are unsupervised).
    estimation_votes: list[list[tuple[int, str]]] = [[] for _ in estimation_texts]
    for record in estimation.records:
        if record.cluster is not None:
            estimation_votes[record.query_index].append((record.source_id, f"{record.cluster}"))

    tests = [corpus.question(q) for q in corpus.test_ids]
    limits = [ceiling(corpus, q) for q in tests]
    topic_cells = topic_reliability_cells(corpus, tests, ctx, embedder)
    voted_shares: dict[str, list[float]] = {}  # qid -> ra-rag's topics for the vote
    runs: dict[str, MethodRun] = {}
    test_votes: list[list[tuple[int, str]]] = []
    strategy_names = [m for m in methods if m not in CROWD_METHODS]
    if any(m in CROWD_METHODS for m in methods) and CROWD_BASE not in strategy_names:
        strategy_names.append(CROWD_BASE)
    for name in strategy_names:
        strategy_name, overrides = method_spec(name)
        strategy = get_strategy(strategy_name)
        ensure_runnable(strategy, ctx)
        strategy_params = parse_params(strategy.Params, overrides, defaults)
        run = MethodRun()
        for q in tests:
            ctx.oracle = corpus.reliability_for(q.qid)  # the oracle knows each question's topic
            replayed = getattr(generator, "replayed_seconds", 0.0)
            started = time.perf_counter()
            result = strategy.answer_checked(q.question, ctx, strategy_params)
            # A generation served from the on-disk cache counts what it cost when it was made.
            run.seconds += time.perf_counter() - started + getattr(generator, "replayed_seconds", 0.0) - replayed
            run.calls += result.stats.calls
            run.tokens += result.stats.tokens
            run.answers.append(result.answer)
            run.correct.append(answer_contains_gold(result.answer, q.gold))
            run.confidences.append(float(result.confidence))
            run.stages.append(attribute(corpus, q, result, documents, limits[len(run.stages)]))
            run.warned.append(bool(result.notes))
            if not run.correct[-1]:
                run.wrong.append(wrong_record(q, result, run.stages[-1], documents))
            if name == "ra-rag" and ctx.topics is not None:
                topic = result.trace.get("topic")
                membership = topic.get("membership") if isinstance(topic, dict) else None
                if isinstance(membership, dict):
                    voted_shares[q.qid] = [float(membership.get(t.key, 0.0)) for t in ctx.topics.topics]
            if name == CROWD_BASE:
                labels = {c.id: c.label for c in result.clusters}
                test_votes.append([(v.source_id, labels[v.cluster]) for v in result.votes if v.cluster is not None])
        for qid in corpus.config.get("outside_ids", []):  # type: ignore[attr-defined]  # a list of ids when set
            result = strategy.answer_checked(corpus.question(str(qid)).question, ctx, strategy_params)
            run.outside += 1
            run.outside_abstained_or_warned += int(is_idk(result.answer) or bool(result.notes))
        runs[name] = run

    for name in (m for m in methods if m in CROWD_METHODS):
        base = runs[CROWD_BASE]
        started = time.perf_counter()
        # Estimation answers are cluster ids, test answers are texts: tasks never mix.
        answers = crowd_answers([*estimation_votes, *test_votes], name)[len(estimation_votes) :]
        elapsed = time.perf_counter() - started
        runs[name] = MethodRun(
            correct=[answer_contains_gold(a, q.gold) for a, q in zip(answers, tests, strict=True)],
            calls=base.calls,
            tokens=base.tokens,
            seconds=base.seconds + elapsed,
            answers=answers,
        )
    runs = {m: runs[m] for m in methods}
    ids = estimation.source_ids
    dependent = [d for d in estimation.reliability.dependence if d.probability >= 0.5]
    flagged = sorted((min(ids[d.a], ids[d.b]), max(ids[d.a], ids[d.b])) for d in dependent)
    identified = identification.identified if identification is not None else True
    shown = (
        sorted(
            (min(ids[d.a], ids[d.b]), max(ids[d.a], ids[d.b])) for d in dependent if d.same_false >= MIN_SHARED_FALSE
        )
        if identified
        else []
    )
    # Adversaries: below a coin overall, or (topic-hammer) adversarial on some topic
    adversaries = sorted(s.id for s in sources if s.reliability < 0.5 or any(p < 0.5 for _, p in s.by_topic))
    colluding = [(a, b) for i, a in enumerate(adversaries) for b in adversaries[i + 1 :]] if config.collude else []

    return SeedRun(
        seed=seed,
        methods=runs,
        true_reliability=true,
        estimated_accuracy={sid: r.accuracy for sid, r in rel.items()},
        estimated_weight=weights,
        answers_count={sid: r.answers for sid, r in rel.items()},
        estimation_calls=estimation.stats.calls,
        estimation_seconds=estimation_seconds,
        n_test=len(tests),
        n_documents=len(corpus.documents),
        flagged_pairs=flagged,
        shown_pairs=shown,
        colluding_pairs=colluding,
        identified=identified,
        gold_used=len(gold),
        calibration=ctx.calibration.as_dict() if ctx.calibration.fitted else {},
        ceilings=ceilings(corpus, tests),
        topic_cells=topic_cells,
        topic_cells_answers=topic_reliability_cells(corpus, tests, ctx, embedder, voted_shares) if voted_shares else [],
        topics=topical.model.as_dict()["topics"] if topical and topical.model else [],  # type: ignore[arg-type]  # as_dict's topics: a list of dicts
    )


def wrong_record(
    q: BenchQuestion, result: StrategyResult, stage: str | None, documents: Mapping[int, CorpusDoc]
) -> dict[str, JSONValue]:
    """One wrong answer as JSON (MethodRun.wrong): a passage read is named by its kind for this
    question ("factual", "misinfo") or "other" (retrieved for another question)."""

    def kind(chunk_id: int) -> str:
        doc = documents.get(chunk_id)
        return doc.kind if doc is not None and doc.qid == q.qid else "other"

    return {
        "qid": q.qid,
        "question": q.question,
        "gold": list(q.gold),
        "answer": result.answer,
        "confidence": round(float(result.confidence), 4),
        "stage": stage,
        "notes": list(result.notes),
        "votes": [
            {
                "source": v.source_id,
                "raw": v.raw_response,
                "response": v.response,
                "filtered": v.filtered,
                "cluster": v.cluster,
                "weight": round(float(v.weight), 4),
                "backend": v.backend,
                "passages": [kind(p.chunk_id) for p in v.passages],
            }
            for v in result.votes
        ],
    }


def topic_reliability_cells(
    corpus: Corpus,
    tests: Sequence[BenchQuestion],
    ctx: EngineContext,
    embedder: Embedder,
    shares: Mapping[str, Sequence[float]] | None = None,
) -> list[tuple[int, str, float, float]]:
    """(source id, true topic, estimated, true) per source and true topic: the mean over the test questions of that
    topic of the accuracy the product weighs the source with on each (its topics' blend,
    steps.topic_weights, or its one overall number), against the source's true reliability
    on the topic. What ``reliability.topic_pearson`` correlates. ``shares``: per question id,
    its membership in the run's topics as the vote read it (after the answers), in place of
    its text's (``reliability.topic_pearson_answers``)."""
    from core.engine.steps.topic_weights import weigh_by_share, weigh_by_topic

    by_topic: dict[str, list[BenchQuestion]] = {}
    for q in tests:
        by_topic.setdefault(q.topic, []).append(q)
    cells = []
    for topic, questions in sorted(by_topic.items()):
        sums: dict[int, float] = {}
        for q in questions:
            share = shares.get(q.qid) if shares is not None else None
            weighed, _record = weigh_by_topic(q.question, ctx) if share is None else weigh_by_share(ctx, share)
            for s in weighed:
                sums[s.id] = sums.get(s.id, 0.0) + float(s.accuracy if s.accuracy is not None else 0.5)
        truth = {s.id: s.reliability_on(topic) for s in corpus.sources}
        cells += [(sid, topic, sums[sid] / len(questions), truth[sid]) for sid in sorted(sums)]
    return cells
