"""Asking a question, watching it being answered, and the history of past questions."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.engine.graphs.conflict import cluster_graph
from core.engine.strategies import available_strategies, runnable_strategies
from core.models import Question
from core.services.asking import start_question
from core.services.engine_context import configured_offers
from core.services.insights import question_clusters
from core.views.access import analyst_required
from tasks.polling import render_poll

DEFAULT_STRATEGY = "ra-rag"
DEFAULT_KAPPA = 4


def _question(pk: int) -> Question:
    return get_object_or_404(Question.objects.select_related("job", "asked_by"), pk=pk)


def _finished(question: Question) -> bool:
    if question.job is not None:
        return bool(question.job.finished)
    return question.answered_at is not None


def _result_context(question: Question) -> dict[str, Any]:
    context: dict[str, Any] = {"question": question, "finished": _finished(question)}
    if context["finished"]:
        votes = list(question.votes.select_related("source").order_by("rank", "id"))
        clusters = question_clusters(question)
        labels = {c["id"]: c["label"] for c in clusters["clusters"]}
        for vote in votes:
            vote.cluster_label = labels.get(vote.cluster, "")
        context.update(votes=votes, clusters=clusters, graph=cluster_graph(clusters))
    return context


@analyst_required
@require_http_methods(["GET", "POST"])
def ask(request: HttpRequest) -> HttpResponse:
    # Only what the configured backends can run (e.g. no vanilla-llm with the offline reader).
    strategies = runnable_strategies(configured_offers())
    form: dict[str, Any] = {"text": "", "strategy": DEFAULT_STRATEGY, "kappa": DEFAULT_KAPPA}
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        form = {
            "text": request.POST.get("text", ""),
            "strategy": request.POST.get("strategy") or DEFAULT_STRATEGY,
            "kappa": request.POST.get("kappa", "").strip(),
        }
        kappa: Any = None
        if form["kappa"]:
            try:
                kappa = int(form["kappa"])
            except ValueError:
                errors["kappa"] = ["kappa must be a whole number."]
        if not errors:
            try:
                question = start_question(form["text"], strategy=form["strategy"], kappa=kappa, user=request.user)
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"text": exc.messages}
            else:
                if request.htmx:
                    return render(request, "core/_question_panel.html", _result_context(question))
                return redirect("question-detail", pk=question.pk)
        if request.htmx:
            return render(request, "core/_ask_errors.html", {"errors": errors})
    recent = Question.objects.filter(asked_by=request.user).only("id", "text", "answer", "created_at")[:8]
    return render(
        request,
        "core/ask.html",
        {"strategies": strategies, "form": form, "errors": errors, "recent": recent},
        status=400 if errors else 200,
    )


@analyst_required
def question_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The result panel the ask page polls; 286 (htmx: stop polling) once answered."""
    question = _question(pk)
    context = _result_context(question)
    return render_poll(request, "core/_question_panel.html", context, finished=context["finished"])


@analyst_required
def question_detail(request: HttpRequest, pk: int) -> HttpResponse:
    question = _question(pk)
    return render(request, "core/question_detail.html", _result_context(question))


def _parse_date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


@analyst_required
def history(request: HttpRequest) -> HttpResponse:
    questions = (
        Question.objects.select_related("asked_by", "job")
        .annotate(vote_count=Count("votes"))
        .order_by("-created_at", "-id")
        .defer("params", "notes", "clusters")
    )
    strategy = request.GET.get("strategy", "")
    if strategy:
        questions = questions.filter(strategy=strategy)
    start, end = _parse_date(request.GET.get("from")), _parse_date(request.GET.get("to"))
    tz = timezone.get_current_timezone()
    if start:
        questions = questions.filter(created_at__gte=datetime.combine(start, time.min, tzinfo=tz))
    if end:
        questions = questions.filter(created_at__lte=datetime.combine(end, time.max, tzinfo=tz))
    page = Paginator(questions, 25).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "core/history.html",
        {
            "page": page,
            "strategies": available_strategies(),
            "strategy": strategy,
            "start": start.isoformat() if start else "",
            "end": end.isoformat() if end else "",
            "query": query.urlencode(),
        },
    )
