"""Asking questions: validate and enqueue (web, API), answer through the engine (worker, CLI).

start_question() is what a request calls: it stores the Question and dispatches a job for
`tasks.answer_question` (runtime.jobs); nothing waits on a model in the request. answer_question() runs
the strategy and persists the answer with one Vote per consulted source.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.engine.backends.generation import Generator
from core.engine.params import ParamError, describe, parse_params
from core.engine.reliability.identify import NOT_IDENTIFIED_MESSAGE
from core.engine.steps.followup import Rewrite, Turn, rewrite_follow_up, rule_rewrite
from core.engine.strategies import (
    SourceEvent,
    SourceVote,
    Strategy,
    StrategyResult,
    available_strategies,
    ensure_runnable,
    get_strategy,
    missing_requirements,
    strategy_class,
)
from core.engine.strategies.codec import evidence_to_json, graph_to_json, jsonable
from core.engine.strategies.ra_rag import MAX_KAPPA as RA_RAG_MAX_KAPPA
from core.engine.text import IDK, is_idk
from core.engine.types import JSONObject, JSONValue
from core.models import Question, Vote
from core.services.engine_context import build_context, configured_offers, strategy_defaults
from core.services.estimation.checks import unsettled_run_of
from core.services.source_selection import SourceChoice, allowed_ids, resolve_sources
from runtime.jobs import NullProgress, Progress, dispatch_job
from runtime.users import Actor, signed_in

MAX_QUESTION_CHARS = 2000
MAX_PART_DETAIL = 200  # characters of a source's answer shown while the ask runs
MAX_KAPPA = RA_RAG_MAX_KAPPA
MAX_CONVERSATION_TURNS = 10  # earlier turns a follow-up's page shows


def _followed(follows: Question | int | str | None) -> tuple[Question | None, str]:
    """(the question a follow-up follows, or None; why it cannot be followed, or "")."""
    if follows is None or follows == "":
        return None, ""
    if isinstance(follows, Question):
        earlier: Question | None = follows
        pk = follows.pk
    else:
        if isinstance(follows, bool) or not isinstance(follows, int | str) or not str(follows).strip().isdigit():
            return None, "follows must be the id of an earlier question (a whole number)."
        pk = int(str(follows).strip())
        earlier = Question.objects.select_related("job").filter(pk=pk).first()
    if earlier is None:
        return None, f"There is no question #{pk} to follow up."
    if earlier.answered_at is None or (earlier.job is not None and earlier.job.state == "failed"):
        return None, f"Question #{pk} has no answer yet: ask the follow-up once it is answered."
    return earlier, ""


def earlier_turn(earlier: Question) -> Turn:
    """The turn a follow-up of ``earlier`` follows: its standalone question and its answer."""
    return Turn(question=earlier.asked_as, answer=earlier.answer or "")


def conversation(question: Question, limit: int = MAX_CONVERSATION_TURNS) -> list[Question]:
    """The earlier turns of a follow-up's conversation, oldest first (at most ``limit``)."""
    turns: list[Question] = []
    seen = {question.pk}
    pk = question.follows_id
    while pk is not None and pk not in seen and len(turns) < limit:
        seen.add(pk)
        earlier = Question.objects.filter(pk=pk).only("id", "text", "standalone", "answer", "follows_id").first()
        if earlier is None:
            break
        turns.append(earlier)
        pk = earlier.follows_id
    return turns[::-1]


def validate_question(
    text: str, strategy: str, kappa: int | None = None, params: Mapping[str, JSONValue] | None = None
) -> tuple[str, JSONObject]:
    """The cleaned text and the strategy parameters the user gave, validated against the
    strategy's own Params and against what the configured backends can run.

    ``kappa`` is the form's and the API's shortcut for ``params["kappa"]``; strategies that
    take no kappa ignore it. Raises ValidationError naming each offending field."""
    errors: dict[str, str] = {}
    cleaned = (text or "").strip()
    if not cleaned:
        errors["text"] = "Ask a question: the text is empty."
    elif len(cleaned) > MAX_QUESTION_CHARS:
        errors["text"] = f"The question is {len(cleaned)} characters long; at most {MAX_QUESTION_CHARS} are allowed."
    if kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, int) or not 1 <= kappa <= MAX_KAPPA):
        errors["kappa"] = f"kappa must be a whole number from 1 to {MAX_KAPPA}."
    given: JSONObject = dict(params or {})
    if strategy not in available_strategies():
        errors["strategy"] = f"Unknown strategy {strategy!r}; choose one of: {', '.join(available_strategies())}."
    else:
        cls = strategy_class(strategy)
        reasons = missing_requirements(cls, configured_offers())
        if reasons:
            errors["strategy"] = " ".join(reasons)
        if kappa is not None and "kappa" not in errors and "kappa" in {f["name"] for f in describe(cls.Params)}:
            given.setdefault("kappa", kappa)
        try:
            parse_params(cls.Params, given)
        except ParamError as exc:
            for name, message in exc.errors.items():
                errors.setdefault(name, message)
    if errors:
        raise ValidationError(errors)
    return cleaned, given


def _new_question(
    text: str,
    strategy: str,
    kappa: int | None,
    user: Actor | None,
    params: Mapping[str, JSONValue] | None = None,
    sources: SourceChoice | None = None,
    follows: Question | int | str | None = None,
) -> Question:
    """Validate everything (the question, its parameters, its choice of sources, the
    question it follows up), report every offending field at once, and store the question."""
    errors: dict[str, list[str]] = {}
    given: JSONObject
    cleaned, given, selection = "", {}, {}
    try:
        cleaned, given = validate_question(text, strategy, kappa, params)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    earlier, why = _followed(follows)
    if why:
        errors["follows"] = [why]
    try:
        selection = resolve_sources(sources, strategy, user)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    asked_by = signed_in(user)
    # A follow-up gets its deterministic standalone form now (cheap, and shown at once); with a
    # language model the worker rewrites it again before answering (answer_question).
    standalone = rule_rewrite(earlier_turn(earlier), cleaned).text if earlier is not None else ""
    return Question.objects.create(
        text=cleaned,
        strategy=strategy,
        params=given,
        source_selection=selection,
        asked_by=asked_by,
        follows=earlier,
        standalone=standalone,
    )


def start_question(
    text: str,
    *,
    strategy: str = "ra-rag",
    kappa: int | None = None,
    params: Mapping[str, JSONValue] | None = None,
    sources: SourceChoice | None = None,
    user: Actor | None = None,
    follows: Question | int | str | None = None,
) -> Question:
    """Store the question and dispatch its answering (`tasks.answer_question`, "default" queue).
    ``sources`` limits the sources it may read (core.services.source_selection); ``follows``
    (an answered question, or its id) makes it a follow-up of that question."""
    with transaction.atomic():
        question = _new_question(text, strategy, kappa, user, params, sources, follows)
        question.job_id = dispatch_job(
            kind="ask",
            task_name="tasks.answer_question",
            params={"question_id": question.pk},
            user=user,
            queue="default",
        ).id
        question.save(update_fields=["job"])
    return question


def ask_now(
    text: str,
    *,
    strategy: str = "ra-rag",
    kappa: int | None = None,
    params: Mapping[str, JSONValue] | None = None,
    sources: SourceChoice | None = None,
    user: Actor | None = None,
    progress: Progress | None = None,
    follows: Question | int | str | None = None,
) -> Question:
    """Ask and answer synchronously (the CLI)."""
    question = _new_question(text, strategy, kappa, user, params, sources, follows)
    return answer_question(question, progress)


def _passages_json(vote: SourceVote) -> list[JSONValue]:
    return [
        {
            "chunk_id": p.chunk_id,
            "document_id": p.document_id,
            "title": p.title,
            "url": p.url,
            "text": p.text,
            "distance": round(float(p.distance), 6),
        }
        for p in vote.passages
    ]


def _notes(result: StrategyResult, strategy: Strategy, n_sources: int) -> list[str]:
    notes: list[str] = []
    if n_sources == 0 and strategy.uses_sources:
        notes.append("No active source holds documents yet: nothing to retrieve from.")
    notes.extend(result.notes)
    unsettled = unsettled_run_of(sorted({v.source_id for v in result.votes}))
    if unsettled is not None:
        notes.append(f"{NOT_IDENTIFIED_MESSAGE} (estimation run #{unsettled.pk})")
    return notes


class SourceProgress:
    """Turns the engine's per-source events (core.engine.strategies.SourceEvent) into the
    job's parts, one per source, numbered in the order they were first reported."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.order: dict[int, int] = {}

    def __call__(self, events: Sequence[SourceEvent]) -> None:
        parts: dict[str, dict[str, JSONValue]] = {}
        for event in events:
            n = self.order.setdefault(event.source_id, len(self.order))
            parts[f"source-{event.source_id}"] = {
                "n": n,
                "source_id": event.source_id,
                "label": event.source_name,
                "state": event.state.value,
                "detail": event.response[:MAX_PART_DETAIL],
            }
        self.progress.report_parts(parts)


def _rewrite(question: Question, generator: Generator | None) -> Rewrite | None:
    """A follow-up's standalone form, rewritten again now that the generator is at hand (a
    language model's rewrite, checked, else the deterministic one); stored in
    ``question.standalone``. None for a question that follows none (or whose earlier question
    was deleted: the standalone form stored when it was asked stays)."""
    if question.follows_id is None:
        return None
    earlier = Question.objects.filter(pk=question.follows_id).first()
    if earlier is None:
        return None
    rewrite = rewrite_follow_up(earlier_turn(earlier), question.text, generator)
    question.standalone = rewrite.text
    return rewrite


def answer_question(question: Question, progress: Progress | None = None) -> Question:
    """Run the question's strategy through the engine and persist the answer, its votes and
    its evidence. Parameters were validated when the question was stored; settings fill the
    ones the user did not give. Only the sources the question allows are read
    (Question.source_selection); each source's progress is reported as a part of the job."""
    progress = progress or NullProgress()
    progress.set_total(2, "Loading models and sources")
    started = time.perf_counter()
    strategy = get_strategy(question.strategy)
    ctx = build_context(among=allowed_ids(question.source_selection), listener=SourceProgress(progress))
    ensure_runnable(strategy, ctx)
    known = {f["name"] for f in describe(strategy.Params)}
    params = parse_params(
        strategy.Params, {k: v for k, v in question.params.items() if k in known}, strategy_defaults()
    )
    rewrite = _rewrite(question, ctx.generator)
    progress.advance(1, f"Answering with {question.strategy} over {len(ctx.sources)} source(s)")
    result = strategy.answer_checked(question.asked_as, ctx, params)
    seconds = time.perf_counter() - started
    accuracy = {s.id: s.accuracy for s in ctx.sources}

    with transaction.atomic():
        question.answer = IDK if is_idk(result.answer) else result.answer
        question.confidence = float(result.confidence)
        question.backend = result.backend
        question.clusters = [
            {"id": c.id, "label": c.label, "members": list(c.members), "weight": float(c.weight)}
            for c in result.clusters
        ]
        question.calls = result.stats.calls + (rewrite.calls if rewrite else 0)
        question.tokens = result.stats.tokens + (rewrite.tokens if rewrite else 0)
        question.seconds = round(seconds, 4)
        question.notes = _notes(result, strategy, len(ctx.sources))
        question.params = params.as_dict()
        question.evidence = evidence_to_json(result.evidence)
        question.graph = graph_to_json(result.graph)
        question.trace = jsonable(result.trace)
        if rewrite is not None:
            question.trace = {
                **question.trace,
                "follow_up": {"follows": question.follows_id, "method": rewrite.method, "fallback": rewrite.fallback},
            }
        question.answered_at = timezone.now()
        question.full_clean(validate_unique=False, validate_constraints=False)
        question.save()
        question.votes.all().delete()  # answering again replaces the previous votes
        Vote.objects.bulk_create(
            [
                Vote(
                    question=question,
                    source_id=vote.source_id,
                    rank=rank,
                    raw_response=vote.raw_response,
                    response=vote.response,
                    filtered=vote.filtered,
                    align_score=float(vote.align_score),
                    cluster=vote.cluster,
                    weight=float(vote.weight),
                    reliability=accuracy.get(vote.source_id),
                    passages=_passages_json(vote),
                    backend=vote.backend[:200],
                )
                for rank, vote in enumerate(result.votes)
            ]
        )
    progress.advance(1, "Answered")
    return question


def waiting_reason(question: Question) -> str:
    """Why a question not yet taken by a worker waits: its place in the question queue and
    what the question worker is doing ("" once it runs). Questions have a worker of their
    own (scripts/run.sh), so only other questions are ever ahead of one."""
    job = question.job
    if job is None or job.state != "pending":
        return ""
    pending = Question.objects.filter(job__state="pending")
    ahead = pending.filter(job__created_at__lt=job.created_at).count()
    answering = Question.objects.filter(job__state="running").count()
    parts = []
    if answering:
        parts.append(f"{answering} question{'s' if answering != 1 else ''} being answered")
    if ahead:
        parts.append(f"{ahead} more ahead of this one in the question queue")
    if parts:
        return "Waiting for the question worker: " + ", ".join(parts) + "."
    waited = (timezone.now() - job.created_at).total_seconds()
    if waited > 30:
        return (
            f"No question worker has taken this question in {waited:.0f} s, and none is answering another: "
            "is the question worker running? (scripts/run.sh starts one; docs/operations.md)"
        )
    return "Next in the question queue."
