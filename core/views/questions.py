"""A question after it was asked: the panel the ask page polls while it is answered, its
permalink page, and the history of past questions (filtered through core.forms.query)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from core.engine.strategies import available_strategies
from core.forms.query import HistoryForm
from core.models import Question
from core.roles import analyst_required
from core.services.pages.answer_panel import answer_panel, conversation_page
from core.services.pages.question_history import question_history
from core.views.query import bad_query
from tasks.polling import render_poll

HISTORY_PAGE = 25


def _question(pk: int) -> Question:
    return get_object_or_404(Question.objects.select_related("job", "asked_by"), pk=pk)


def _is_at(request: HttpRequest, path: str) -> bool:
    """Whether the page that sent this htmx request (its HX-Current-URL) is at ``path``."""
    return urlsplit(request.headers.get("HX-Current-URL", "")).path == path


@analyst_required
def question_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The result panel the ask page polls; 286 (htmx: stop polling) once answered."""
    question = _question(pk)
    context = answer_panel(question, request.user)
    response = render_poll(request, "core/_question_panel.html", context, finished=context["finished"])
    permalink = reverse("question-detail", args=[question.pk])
    if context["finished"] and request.headers.get("HX-Request") and not _is_at(request, permalink):
        # The answer arrived: the address bar shows its permalink, so a reload keeps it (not
        # pushed again on the permalink page itself: Back would stay on the same address).
        response["HX-Push-Url"] = permalink
    return response


@analyst_required
def question_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "core/question_detail.html", conversation_page(_question(pk), request.user))


@analyst_required
def history(request: HttpRequest) -> HttpResponse:
    """Past questions, newest first; the same question asked again is one row, its latest
    asking, with how many times it was asked (core.services.pages.question_history)."""
    form = HistoryForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    start, end = form.cleaned_data.get("from"), form.cleaned_data.get("to")
    questions = question_history(strategy=form.text("strategy"), q=form.text("q"), start=start, end=end)
    page = Paginator(questions, HISTORY_PAGE).get_page(form.cleaned_data.get("page"))
    return render(
        request,
        "core/history.html",
        {
            "page": page,
            "strategies": available_strategies(),
            "strategy": form.text("strategy"),
            "q": form.text("q"),
            "start": start.isoformat() if start else "",
            "end": end.isoformat() if end else "",
            "query": form.pager_query(),
        },
    )
