"""`{% load feedback %}`: the feedback buttons of an answered question (core/views/feedback.py).

`{% answer_feedback question %}` renders "Is this answer right?" with the signed-in user's
verdict; `{% source_feedback question vote %}` the "wrong here" button of one vote row. The
user's feedback is read once per question and request."""

from __future__ import annotations

from typing import Any

from django import template

from core.models import Question, Vote
from core.views.feedback import answer_feedback_context, source_feedback_context

register = template.Library()


def _user(context: Any) -> Any:
    request = context.get("request")
    return getattr(request, "user", None) or context.get("user")


@register.inclusion_tag("core/_answer_feedback.html", takes_context=True)
def answer_feedback(context: Any, question: Question) -> dict[str, Any]:
    return answer_feedback_context(question, _user(context), context.get("csrf_token"))


@register.inclusion_tag("core/_source_feedback.html", takes_context=True)
def source_feedback(context: Any, question: Question, vote: Vote) -> dict[str, Any]:
    return source_feedback_context(question, vote, _user(context), context.get("csrf_token"))
