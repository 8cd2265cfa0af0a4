"""Feedback buttons on an answered question: "the answer is right / wrong" and "this source is
wrong here" (core.services.feedback). The buttons are forms that htmx posts (the CSRF token
travels in the page's hx-headers and in the form); without script they post and come back
to the question's page. The answer page renders them with the {% answer_feedback %} and
{% source_feedback %} tags (core/templatetags/feedback.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.engine.text import is_idk
from core.forms.feedback import FeedbackForm
from core.models import MAX_CORRECTED_ANSWER_CHARS, MAX_FEEDBACK_COMMENT_CHARS, AnswerFeedback, Question, Vote
from core.roles import analyst_required, is_analyst
from core.services.feedback import FEEDBACK_QUERY_SET, FeedbackState, feedback_state, record_feedback
from core.views.htmx import HtmxHttpRequest
from runtime.users import Actor
from sources.models import Source

Kind = AnswerFeedback.Kind
Status = AnswerFeedback.Status


def status_text(feedback: AnswerFeedback | None) -> str:
    """What the page says about the user's feedback once given."""
    if feedback is None:
        return ""
    if feedback.status == Status.PENDING:
        if feedback.kind == Kind.ANSWER_WRONG:
            if feedback.corrected_answer:
                return "Thanks — a curator will review your correction."
            # Said on the click, before any correction: ask for it rather than thank for it.
            return "Marked as wrong; a curator will review it. If you know the right answer, add it below."
        return "Thanks — a curator will review this."
    if feedback.status == Status.REJECTED:
        return "A curator reviewed this and did not accept it."
    if feedback.gold_query_id:
        return (
            f"A curator confirmed this: “{feedback.gold_answer}” is now a checked answer that estimation runs "
            f"over “{FEEDBACK_QUERY_SET}” test the sources against. Once such a run has finished, "
            "“Ask again” answers with the updated reliabilities and says what changed."
        )
    return "A curator confirmed this; it is kept as a known wrong answer."


def _state(question: Question, user: Actor) -> FeedbackState:
    """The user's feedback on the question, read once per request (the answer box and every
    vote row ask for it)."""
    cache: dict[int, FeedbackState] = question.__dict__.setdefault("_feedback_states", {})
    key = getattr(user, "pk", None) or 0
    if key not in cache:
        cache[key] = feedback_state(question, user)
    return cache[key]


def answer_feedback_context(question: Question, user: Actor, csrf_token: object, error: str = "") -> dict[str, Any]:
    verdict = _state(question, user).verdict
    return {
        "question": question,
        "verdict": verdict,
        "status": status_text(verdict),
        "can_give": is_analyst(user) and question.answered_at is not None,
        "answer_is_idk": is_idk(question.answer),
        "csrf_token": csrf_token,
        "error": error,
        "max_corrected": MAX_CORRECTED_ANSWER_CHARS,
        "max_comment": MAX_FEEDBACK_COMMENT_CHARS,
    }


def source_feedback_context(
    question: Question, vote: Vote, user: Actor, csrf_token: object, error: str = ""
) -> dict[str, Any]:
    flag = _state(question, user).by_source.get(vote.source_id)
    return {
        "question": question,
        "source_id": vote.source_id,
        "source_name": vote.source.name,
        "flag": flag,
        "status": status_text(flag),
        "can_flag": is_analyst(user)
        and question.answered_at is not None
        and not vote.filtered
        and not is_idk(vote.response),
        "csrf_token": csrf_token,
        "error": error,
        "max_corrected": MAX_CORRECTED_ANSWER_CHARS,
    }


def _first_error(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return " ".join(f"{name}: {' '.join(msgs)}" for name, msgs in exc.message_dict.items())
    return " ".join(exc.messages)


@analyst_required
@require_POST
def question_feedback(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Record the user's feedback; htmx gets the updated buttons (and their status line, out of
    band, so that a screen reader announces it), a plain form post the question's page."""
    question = get_object_or_404(Question, pk=pk)
    form = FeedbackForm(request.POST)
    error = "" if form.is_valid() else form.problem()
    data = form.cleaned_data
    source: Source | None = data.get("source")
    if not error:
        try:
            record_feedback(
                question,
                request.user,
                data["kind"],
                source=source,
                corrected_answer=data["corrected_answer"],  # None (a bare button): kept as stored
                comment=data["comment"],
            )
        except ValidationError as exc:
            error = _first_error(exc)
    if not request.htmx:
        if error:
            messages.error(request, f"Your feedback was not saved. {error}")
        else:
            messages.success(request, "Thanks — a curator will review this.")
        return redirect("question-detail", pk=question.pk)
    token = get_token(request)
    if data.get("kind") == Kind.SOURCE_WRONG or form.names_a_source():
        # From a vote row's buttons: answer with that row's buttons.
        vote = Vote.objects.select_related("source").filter(question=question, source=source).first()
        if vote is None:
            return render(request, "core/_feedback_error.html", {"error": error or "No such vote."})
        context = source_feedback_context(question, vote, request.user, token, error)
        return render(request, "core/_source_feedback_swap.html", context)
    context = answer_feedback_context(question, request.user, token, error)
    return render(request, "core/_answer_feedback_swap.html", context)
