"""Asking a question: the ask form and a follow-up's box (core.forms.ask) post here. The form
parses, the service (core.services.asking.start_question) stores the question and starts its
answering, and the answer's panel comes from core.services.pages.answer_panel."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_http_methods

from core.api.throttles import ask_rate, ask_throttle_wait
from core.forms.ask import AskForm, blank_values
from core.models import Question
from core.roles import analyst_required
from core.services.asking import MAX_QUESTION_CHARS, start_question
from core.services.pages.answer_panel import answer_panel, conversation_page
from core.services.pages.ask_form import AskValues, recent_questions, source_picker, strategy_groups
from core.services.pages.runs import estimation_in_progress
from core.views.htmx import HtmxHttpRequest

Errors = dict[str, list[str]]


@analyst_required
@require_http_methods(["GET", "POST"])
def ask(request: HtmxHttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _ask_page(request, blank_values(), {}, status=200)
    form = AskForm(request.POST)
    if (wait := ask_throttle_wait(request)) is not None:
        return _too_many_asks(request, form, wait)
    form.is_valid()
    errors = form.errors_by_field()
    if not errors:
        data = form.cleaned_data
        try:
            question = start_question(
                data["text"],
                strategy=data["strategy"],
                kappa=data["kappa"],
                sources=form.source_choice(),
                user=request.user,
                follows=data["follows"],
            )
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"text": exc.messages}
        else:
            return _asked(request, question)
    if form.is_follow_up():
        return _follow_up_errors(request, form, errors)
    if request.htmx:
        return render(request, "core/_ask_errors.html", {"errors": errors})
    return _ask_page(request, form.values(), errors, status=400)


def _asked(request: HtmxHttpRequest, question: Question) -> HttpResponse:
    """The question was stored: its panel (htmx), the follow-up's conversation, or its page."""
    if request.htmx and question.follows_id is not None:
        # The follow-up replaces the page's conversation: earlier turns, then its panel
        # (on a question's page, with the page's heading: it becomes the follow-up's page).
        on_question_page = _current_url_name(request) == "question-detail"
        template = "core/_question_page.html" if on_question_page else "core/_conversation.html"
        context = conversation_page(question, request.user)
        # htmx sets the tab's title from a <title> in the response: the page is the follow-up's now.
        context["swap_title"] = on_question_page
        response = render(request, template, context)
        response["HX-Push-Url"] = reverse("question-detail", args=[question.pk])
        return response
    if request.htmx:
        return render(request, "core/_question_panel.html", answer_panel(question, request.user))
    return redirect("question-detail", pk=question.pk)


def _follow_up_errors(request: HtmxHttpRequest, form: AskForm, errors: Errors) -> HttpResponse:
    """A follow-up that was not sent: with htmx, the errors go under its box (not over the
    conversation); without, the earlier question's page again with the box, the text typed
    and the errors (or the ask page when there is no such question to follow)."""
    if request.htmx:
        response = render(request, "core/_ask_errors.html", {"errors": errors})
        response["HX-Retarget"] = "#follow-up-errors"
        response["HX-Reswap"] = "innerHTML"
        return response
    follows = form.cleaned_data.get("follows")
    earlier = Question.objects.select_related("job", "asked_by").filter(pk=follows).first() if follows else None
    values = form.values()
    if earlier is None:
        return _ask_page(request, values, errors, status=400)
    context = conversation_page(earlier, request.user, follow_up_text=values["text"], follow_up_errors=errors)
    return render(request, "core/question_detail.html", context, status=400)


def _ask_page(request: HttpRequest, values: AskValues, errors: Errors, status: int) -> HttpResponse:
    # Only what the configured backends can run (e.g. no vanilla-llm with the offline reader).
    product, research = strategy_groups()
    return render(
        request,
        "core/ask.html",
        {
            "product_strategies": product,
            "research_strategies": research,
            "form": values,
            "errors": errors,
            "recent": recent_questions(request.user),
            "max_chars": MAX_QUESTION_CHARS,
            "estimation": estimation_in_progress(),
            **source_picker(request.user, values, errors),
        },
        status=status,
    )


def _too_many_asks(request: HtmxHttpRequest, form: AskForm, wait: int) -> HttpResponse:
    """429 for an ask past the user's "ask" budget (shared with POST /api/questions/):
    nothing is stored; the message says when to ask again (and so does Retry-After)."""
    message = (
        f"You have asked too many questions in a short time (at most {ask_rate()}, counting the "
        f"questions asked through the API). Ask again in {wait} second{'s' if wait != 1 else ''}."
    )
    errors = {"text": [message]}
    if request.htmx:
        response = render(request, "core/_ask_errors.html", {"errors": errors}, status=429)
        if form.is_follow_up():
            response["HX-Retarget"] = "#follow-up-errors"
            response["HX-Reswap"] = "innerHTML"
    else:
        values = blank_values()
        values["text"] = form.values()["text"]
        response = _ask_page(request, values, errors, status=429)
    response["Retry-After"] = str(wait)
    return response


def _current_url_name(request: HttpRequest) -> str:
    """The URL name of the page that sent this htmx request (its HX-Current-URL), or ""."""
    try:
        return resolve(urlsplit(request.headers.get("HX-Current-URL", "")).path).url_name or ""
    except Resolver404:
        return ""
