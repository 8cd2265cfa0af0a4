"""Build the engine's context (core.engine.strategies.EngineContext) from Django settings and the database.

The model backends (generator, NLI, embedder) come from runtime.backends, built once per
process and cached by their settings. The source list is read fresh for every question or
batch, so a finished estimation run changes the next answer's weights at once.

Two reliability numbers, on purpose:
- Source.reliability is the estimated *accuracy* w_i in [0, 1] (the Beta-smoothed share of a
  source's non-IDK answers that agreed with the estimated truth). It is what users see.
- The *voting weight* v_i is what WMV and kappa-RRSS use, under the weight scheme of the
  configured estimator (settings.RELIABILITY_ESTIMATOR): "paper", v_i = N * w_i - 1 (RA-RAG
  eq. 4, floored at a small positive value), for iwmv and truthfinder; "log-odds",
  v_i = max(0, ln(w_i / (1 - w_i))), for onecoin and accucopy. It is recomputed here from w_i
  with N = the number of sources in the context, so weights stay on one scale even when runs
  covered different sources. A source never estimated gets the prior mean accuracy (0.5).
The conversion lives in core.engine.reliability.weights (voting_weight); SourceInfo carries
both numbers (``weight`` = v_i, ``accuracy`` = w_i).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from django.conf import settings
from django.db.models import Exists, OuterRef

from core.engine.backends.nli import NLI
from core.engine.reliability import get_estimator
from core.engine.reliability.weights import voting_weight
from core.engine.steps.calibration import Calibration
from core.engine.steps.dependence import groups_per_topic
from core.engine.strategies.base import EngineContext, EstimationParams, Requirement, SourceListener, offers_of
from core.engine.strategies.pipeline import FEW_CHECKED_ANSWERS
from core.engine.types import Embedder, JSONObject, SourceInfo
from core.models import EstimationRun
from core.services.topics import latest_topic_run, run_topics, stored_copy_groups, topic_accuracies
from runtime.backends import configured_embedder, configured_generator, configured_nli
from sources.claim_store import PgClaimStore
from sources.models import Claim, Source
from sources.retrieval import PgRetriever, VectorSink


def configured_params(
    *, k: int | None = None, tau: float | None = None, strict: bool | None = None, min_relevance: float | None = None
) -> EstimationParams:
    """Retrieval and filtering settings of reliability estimation (settings, then overrides)."""
    base = EstimationParams(k=settings.RETRIEVAL_K, tau=settings.ALIGN_TAU, min_relevance=settings.MIN_RELEVANCE)
    return replace(
        base,
        k=base.k if k is None else k,
        tau=base.tau if tau is None else tau,
        strict_clustering=base.strict_clustering if strict is None else strict,
        min_relevance=base.min_relevance if min_relevance is None else min_relevance,
    )


def strategy_defaults() -> JSONObject:
    """Settings that fill strategy parameters a user did not give (core.engine.params)."""
    return {
        "kappa": settings.RA_RAG_KAPPA,
        "k": settings.RETRIEVAL_K,
        "tau": settings.ALIGN_TAU,
        "min_relevance": settings.MIN_RELEVANCE,
    }


def claims_exist() -> bool:
    """Whether any claim is stored (one indexed EXISTS query): the claim store, and with it
    the strategies that need Requirement.CLAIMS (multirag), are offered only then."""
    return Claim.objects.exists()


def configured_offers() -> frozenset[Requirement]:
    """What the configured backends and the database can give a strategy (see Requirement);
    cheap: the generator object is cached and loads no weights until it generates, and
    whether claims exist is one EXISTS query."""
    return offers_of(configured_generator(), claims=claims_exist())


def weight_scheme() -> str:
    """The weight scheme of the configured estimator (RELIABILITY_ESTIMATOR)."""
    return get_estimator(settings.RELIABILITY_ESTIMATOR).weight_scheme


def source_infos(source_ids: list[int] | None = None, *, among: Collection[int] | None = None) -> list[SourceInfo]:
    """Active sources that hold chunks (a source with nothing to retrieve cannot answer),
    as SourceInfo with their voting weight and their displayed accuracy. ``source_ids``:
    exactly these sources instead (an estimation run's); ``among``: only the active ones
    with chunks among these (a question limited to some sources)."""
    rows = Source.objects.filter(active=True, chunk_count__gt=0)
    if among is not None:
        rows = rows.filter(pk__in=list(among))
    if source_ids is not None:
        rows = Source.objects.filter(pk__in=source_ids)
    listed = list(rows.order_by("id").values_list("id", "name", "reliability", "reliability_answers"))
    n = len(listed)
    scheme = weight_scheme()
    prior = voting_weight(None, n, scheme=scheme)
    infos = [
        SourceInfo(
            id=i,
            name=name,
            weight=explored_weight(voting_weight(rel, n, scheme=scheme), answers, prior),
            answers_count=answers,
            accuracy=rel,
        )
        for i, name, rel, answers in listed
    ]
    return infos


def explored_weight(weight: float, answers: int | None, prior: float) -> float:
    """A source whose reliability rests on fewer than FEW_CHECKED_ANSWERS answers is not written
    off: its weight is at least the prior's (a never-estimated source's), so kappa-RRSS still
    asks it and its answer still counts. One off-topic retrieval must not bury a new source that
    holds the facts (its low estimate stays on show, with the thin-evidence caveat)."""
    if answers and answers < FEW_CHECKED_ANSWERS:
        return max(weight, prior)
    return weight


def claim_source_infos(
    source_ids: list[int] | None = None, *, among: Collection[int] | None = None
) -> list[SourceInfo]:
    """Active sources that hold claims (or the given ones that do, or those among ``among``),
    as SourceInfo with their voting weight among them: what claim strategies (multirag) weigh."""
    rows = Source.objects.filter(active=True).filter(Exists(Claim.objects.filter(source=OuterRef("pk"))))
    if source_ids is not None:
        rows = rows.filter(pk__in=source_ids)
    if among is not None:
        rows = rows.filter(pk__in=list(among))
    listed = list(rows.order_by("id").values_list("id", "name", "reliability", "reliability_answers"))
    scheme = weight_scheme()
    return [
        SourceInfo(
            id=i, name=name, weight=voting_weight(rel, len(listed), scheme=scheme), answers_count=n, accuracy=rel
        )
        for i, name, rel, n in listed
    ]


def stored_vector_sink(nli: NLI, embedder: Embedder) -> VectorSink | None:
    """The NLI's `remember` when it encodes texts with the very embedder that embedded the
    chunks: a chunk's stored vector is then what it would compute for the chunk's text, so
    retrieved passages are handed over with their vectors and never encoded again (same
    scores, and an ask's alignment filter encodes only the short answers)."""
    remember = getattr(nli, "remember", None)
    return remember if callable(remember) and getattr(nli, "embedder", None) is embedder else None


def build_context(
    *,
    source_ids: list[int] | None = None,
    among: Collection[int] | None = None,
    listener: SourceListener | None = None,
    k: int | None = None,
    tau: float | None = None,
    strict: bool | None = None,
    min_relevance: float | None = None,
) -> EngineContext:
    """An EngineContext over the database: PgRetriever, configured backends, current sources,
    and the claim store when claims exist. ``among`` limits every kind of retrieval (per
    source, pooled, claims) to the active sources among these ids; ``listener`` hears the
    strategy's per-source progress."""
    embedder: Embedder = configured_embedder()
    nli = configured_nli()
    sources = source_infos(source_ids, among=among)
    run = latest_topic_run()
    topics = run_topics(run)
    if topics is not None:
        by_source = topic_accuracies(run)
        sources = [
            replace(s, topic_accuracy=by_source[s.id]) if len(by_source.get(s.id, ())) == len(topics.topics) else s
            for s in sources
        ]
    has_claims = claims_exist()
    # Imported here: the copying pages read the estimation services, which build contexts.
    from core.services.pages.copying import latest_copy_groups, latest_copy_run

    copy_run = latest_copy_run()
    overall_groups = latest_copy_groups(copy_run)
    # Per-topic groups refine the overall ones only when both come from one run (the topics'
    # run, or the full run it updates).
    same_run = run is not None and copy_run is not None and copy_run.pk in (run.pk, run.parent_id)
    by_topic = stored_copy_groups(run) if topics is not None and same_run else {}

    return EngineContext(
        retriever=PgRetriever(
            pooled_among=None if among is None else sorted(among), vector_sink=stored_vector_sink(nli, embedder)
        ),
        embedder=embedder,
        generator=configured_generator(),
        nli=nli,
        sources=sources,
        params=configured_params(k=k, tau=tau, strict=strict, min_relevance=min_relevance),
        claims=PgClaimStore(embedder) if has_claims else None,
        claim_sources=claim_source_infos(source_ids, among=among) if has_claims else [],
        listener=listener,
        calibration=latest_calibration(),
        weight_scheme=weight_scheme(),
        topics=topics,
        copy_groups=overall_groups,
        # Per topic: its own groups where the run found them on a settled topic, else the
        # overall ones; none without overall groups (the rule the benchmark applies too).
        topic_copy_groups=groups_per_topic([by_topic.get(t.key) for t in topics.topics], overall_groups)
        if topics is not None
        else (),
    )


def latest_calibration() -> Calibration:
    """The answer calibration of the latest finished full estimation run (fitted on its checked
    queries; the identity when it had none, or when no run has finished)."""
    stored = (
        EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED, kind=EstimationRun.Kind.FULL)
        .order_by("-finished_at", "-id")
        .values_list("calibration", flat=True)
        .first()
    )
    return Calibration.from_dict(stored)
