"""Asking questions: validate and enqueue (web, API), answer through the engine (worker, CLI).

start_question() is what a request calls: it stores the Question and a Job and enqueues
`tasks.answer_question`; nothing waits on a model in the request. answer_question() runs
the strategy and persists the answer with one Vote per consulted source.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.engine.strategies import StrategyResult, available_strategies, get_strategy
from core.engine.text import IDK, is_idk
from core.models import Question, Vote

MAX_QUESTION_CHARS = 2000
MAX_KAPPA = 50


def validate_question(text: str, strategy: str, kappa: int | None) -> str:
    """The cleaned question text; ValidationError naming each offending field."""
    errors: dict[str, str] = {}
    cleaned = (text or "").strip()
    if not cleaned:
        errors["text"] = "Ask a question: the text is empty."
    elif len(cleaned) > MAX_QUESTION_CHARS:
        errors["text"] = f"The question is {len(cleaned)} characters long; at most {MAX_QUESTION_CHARS} are allowed."
    if strategy not in available_strategies():
        errors["strategy"] = f"Unknown strategy {strategy!r}; choose one of: {', '.join(available_strategies())}."
    if kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, int) or not 1 <= kappa <= MAX_KAPPA):
        errors["kappa"] = f"kappa must be a whole number from 1 to {MAX_KAPPA}."
    if errors:
        raise ValidationError(errors)
    return cleaned


def _new_question(text: str, strategy: str, kappa: int | None, user: Any) -> Question:
    cleaned = validate_question(text, strategy, kappa)
    params: dict[str, Any] = {} if kappa is None else {"kappa": kappa}
    asked_by = user if getattr(user, "is_authenticated", False) else None
    return Question.objects.create(text=cleaned, strategy=strategy, params=params, asked_by=asked_by)


def start_question(text: str, *, strategy: str = "ra-rag", kappa: int | None = None, user: Any = None) -> Question:
    """Store the question and enqueue its answering on the "default" queue."""
    from tasks.engine_tasks import answer_question as answer_task
    from tasks.jobs import start_job
    from tasks.models import Job

    with transaction.atomic():
        question = _new_question(text, strategy, kappa, user)
        job = start_job(Job.Kind.ASK, answer_task, {"question_id": question.pk}, user=user, queue="default")
        question.job = job
        question.save(update_fields=["job"])
    return question


def ask_now(text: str, *, strategy: str = "ra-rag", kappa: int | None = None, user: Any = None) -> Question:
    """Ask and answer synchronously (the CLI)."""
    question = _new_question(text, strategy, kappa, user)
    return answer_question(question)


def _passages_json(vote: Any) -> list[dict[str, Any]]:
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


def _notes(result: StrategyResult, n_sources: int) -> list[str]:
    notes: list[str] = []
    if n_sources == 0 and result.strategy != "vanilla-llm":
        notes.append("No active source holds documents yet: nothing to retrieve from.")
    note = result.stats.extra.get("note")
    if isinstance(note, str):
        notes.append(note)
    elif isinstance(note, list):
        notes.extend(str(n) for n in note)
    for key in ("notes",):
        if isinstance(result.stats.extra.get(key), list):
            notes.extend(str(n) for n in result.stats.extra[key])
    return notes


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def answer_question(question: Question, progress: Any = None) -> Question:
    """Run the question's strategy through the engine and persist the answer and its votes."""
    from core.services.engine_context import build_context, source_infos

    kappa = question.params.get("kappa")
    if progress is not None:
        progress.set_total(2, "Loading models and sources")
    started = time.perf_counter()
    ctx = build_context(kappa=kappa)
    _, accuracy = source_infos()
    if progress is not None:
        progress.advance(1, f"Answering with {question.strategy} over {len(ctx.sources)} source(s)")
    result = get_strategy(question.strategy).answer(question.text, ctx)
    seconds = time.perf_counter() - started

    with transaction.atomic():
        question.answer = IDK if is_idk(result.answer) else result.answer
        question.confidence = float(result.confidence)
        question.backend = result.backend
        question.clusters = [
            {"id": c.id, "label": c.label, "members": list(c.members), "weight": float(c.weight)}
            for c in result.clusters
        ]
        question.calls = result.stats.calls
        question.tokens = result.stats.tokens
        question.seconds = round(seconds, 4)
        question.notes = _notes(result, len(ctx.sources))
        question.params = {
            **question.params,
            "kappa": ctx.params.kappa,
            "k": ctx.params.k,
            "tau": ctx.params.tau,
            "engine": _jsonable({k: v for k, v in result.stats.extra.items() if k not in ("note", "notes")}),
        }
        question.answered_at = timezone.now()
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
                )
                for rank, vote in enumerate(result.votes)
            ]
        )
    if progress is not None:
        progress.advance(1, "Answered")
    return question
