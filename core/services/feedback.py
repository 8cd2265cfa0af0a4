"""Analysts' feedback on answers, and curators turning it into gold-checked queries.

An analyst (or curator) says of an answered question that its answer is right, that it is
wrong (optionally with the right answer), or that one source's response is wrong here
(optionally with the right answer). ``record_feedback`` stores one AnswerFeedback per
(user, question, kind, source): giving the same feedback again updates it, and an answer
verdict replaces the same user's opposite verdict while that one is still pending.

A curator reviews it (the admin's confirm/reject actions, or the API). ``confirm_feedback``
turns a verdict with a known right answer into gold: the question's text becomes a query of
the "Analyst feedback" query set (FEEDBACK_QUERY_SET, created on first use) whose reference
answer is

- "answer right": the question's answer;
- "answer wrong" or "source wrong here" with a corrected answer: the corrected answer.

Estimation runs over that set then take those queries' truth from the reference answers like
any gold-checked query (core.services.estimation.finish). A confirmed verdict without a right
answer ("answer wrong" or "source wrong here" with no correction) is recorded as a *known
wrong answer* only: the estimators take gold as the right answer of a query, not as an answer
ruled out, so it does not feed estimation; it stays on the feedback for curators to read.

Gold made by feedback is kept consistent: confirming an answer that contradicts the reference
answer another confirmed feedback already gave the same question is refused (the curator
rejects one of them first, or edits the query in the admin); rejecting a confirmed feedback
takes its reference answer back out of the query unless another confirmed feedback gives it
too. The query itself stays (runs may have answered it); without reference answers it is an
ordinary query of the set. A feedback edited after review goes back to pending; the gold it
made stays until a curator confirms the new version or rejects it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.engine.text import is_idk, normalize_answer
from core.models import (
    MAX_CORRECTED_ANSWER_CHARS,
    MAX_FEEDBACK_COMMENT_CHARS,
    AnswerFeedback,
    FactQuery,
    QueryCollection,
    Question,
    Vote,
    validate_question_bytes,
)
from core.roles import is_analyst, is_curator
from core.services.estimation.finish import usable_references
from runtime.users import Actor, Viewer, signed_in
from sources.models import Source

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FEEDBACK_QUERY_SET = "Analyst feedback"
FEEDBACK_QUERY_SET_DESCRIPTION = (
    "Questions whose answers analysts judged and curators confirmed: each query's reference answer is the "
    "confirmed right answer. Estimation runs over this set use them as gold."
)
FEEDBACK_TAG = "analyst-feedback"
Kind = AnswerFeedback.Kind
Status = AnswerFeedback.Status
ANSWER_VERDICTS = (Kind.ANSWER_RIGHT, Kind.ANSWER_WRONG)


def _clean_text(value: object, field: str, limit: int, errors: dict[str, str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[field] = f"{field} must be text."
        return ""
    cleaned = value.strip()
    if "\x00" in cleaned:
        errors[field] = f"{field} must not contain NUL characters."
    elif len(cleaned) > limit:
        errors[field] = f"{field} is {len(cleaned)} characters long; at most {limit} are allowed."
    return cleaned


def _same_answer(a: str, b: str) -> bool:
    return normalize_answer(a) == normalize_answer(b)


def _judged(question: Question, kind: str, source: Source | None, errors: dict[str, str]) -> str:
    """What the feedback judges: the question's answer, or the source's response to it."""
    if kind != Kind.SOURCE_WRONG:
        if source is not None:
            errors["source"] = "Only “source wrong here” feedback names a source."
        return question.answer
    if source is None:
        errors["source"] = "Name the source whose response is wrong here."
        return ""
    vote = Vote.objects.filter(question=question, source=source).only("response", "filtered").first()
    if vote is None:
        errors["source"] = f"The source {source.name!r} did not answer question #{question.pk}."
        return ""
    if vote.filtered or is_idk(vote.response):
        errors["source"] = f"The source {source.name!r} said “I don't know” here: there is no response to call wrong."
        return ""
    return vote.response


def validate_feedback(
    question: Question, kind: object, source: Source | None = None, corrected_answer: object = "", comment: object = ""
) -> tuple[str, str, str]:
    """(the judged answer, the cleaned corrected answer, the cleaned comment); ValidationError
    naming each field at fault."""
    errors: dict[str, str] = {}
    if question.answered_at is None:
        errors["question"] = f"Question #{question.pk} has no answer yet: give feedback once it is answered."
    if not isinstance(kind, str) or kind not in Kind.values:
        errors["kind"] = f"kind must be one of: {', '.join(Kind.values)}."
        raise ValidationError(errors)
    corrected = _clean_text(corrected_answer, "corrected_answer", MAX_CORRECTED_ANSWER_CHARS, errors)
    cleaned_comment = _clean_text(comment, "comment", MAX_FEEDBACK_COMMENT_CHARS, errors)
    judged = _judged(question, kind, source, errors)
    if "question" not in errors:
        if kind == Kind.ANSWER_RIGHT:
            if is_idk(question.answer):
                errors["kind"] = (
                    "The answer is “I don't know”: there is no answer to call right. Say it is wrong, "
                    "and give the right answer if you know it."
                )
            if corrected:
                errors["corrected_answer"] = "An answer called right needs no corrected answer."
        elif corrected and "corrected_answer" not in errors:
            if is_idk(corrected):
                errors["corrected_answer"] = "Give the right answer, or leave it empty if you do not know it."
            elif judged and _same_answer(corrected, judged):
                errors["corrected_answer"] = (
                    "That is the answer you called wrong: give the right one, or leave it empty."
                )
    if errors:
        raise ValidationError(errors)
    return judged, corrected, cleaned_comment


def record_feedback(
    question: Question,
    user: Actor | None,
    kind: str,
    *,
    source: Source | None = None,
    corrected_answer: object = None,
    comment: object = None,
) -> tuple[AnswerFeedback, bool]:
    """Store the user's feedback (analysts and curators); (feedback, created).

    The same (user, question, kind, source) again updates the stored row: a corrected answer
    or comment given (None: not given) replaces the stored one, one not given is kept. If that
    changes the row after a curator reviewed it, it goes back to pending. An answer verdict
    ("right" or "wrong") deletes the same user's opposite verdict on the question while that
    one is pending. ValidationError naming the field for bad input (nothing stored);
    PermissionDenied for a user without a role."""
    account = signed_in(user)
    if account is None or not is_analyst(account):
        raise PermissionDenied("Giving feedback needs the analyst or curator role.")
    if kind not in Kind.values:
        validate_feedback(question, kind)  # raises, naming "kind"
    try:
        with transaction.atomic():
            return _record(question, account, kind, source, corrected_answer, comment)
    except IntegrityError:
        # The same feedback was created by another request at this very moment: update it.
        with transaction.atomic():
            return _record(question, account, kind, source, corrected_answer, comment)


def _record(
    question: Question, user: User, kind: str, source: Source | None, corrected_answer: object, comment: object
) -> tuple[AnswerFeedback, bool]:
    existing = (
        AnswerFeedback.objects.select_for_update()
        .filter(question=question, user=user, kind=kind, source=source)
        .first()
    )
    if corrected_answer is None:
        corrected_answer = existing.corrected_answer if existing is not None else ""
    if comment is None:
        comment = existing.comment if existing is not None else ""
    judged, corrected, cleaned_comment = validate_feedback(question, kind, source, corrected_answer, comment)
    if kind in ANSWER_VERDICTS:
        opposite = Kind.ANSWER_WRONG if kind == Kind.ANSWER_RIGHT else Kind.ANSWER_RIGHT
        AnswerFeedback.objects.filter(question=question, user=user, kind=opposite, status=Status.PENDING).delete()
    if existing is None:
        feedback = AnswerFeedback.objects.create(
            question=question,
            user=user,
            kind=kind,
            source=source,
            answer=judged,
            corrected_answer=corrected,
            comment=cleaned_comment,
        )
        return feedback, True
    changed = (existing.answer, existing.corrected_answer, existing.comment) != (judged, corrected, cleaned_comment)
    if changed:
        existing.answer, existing.corrected_answer, existing.comment = judged, corrected, cleaned_comment
        existing.status = Status.PENDING
        existing.save(update_fields=["answer", "corrected_answer", "comment", "status", "updated_at"])
    return existing, False


def gold_answer_of(feedback: AnswerFeedback) -> str | None:
    """The right answer a confirmed feedback establishes, or None when it only rules an answer out."""
    if feedback.kind == Kind.ANSWER_RIGHT:
        return feedback.answer.strip() or None
    return feedback.corrected_answer.strip() or None


def feedback_query_set() -> QueryCollection:
    query_set, _ = QueryCollection.objects.get_or_create(
        name=FEEDBACK_QUERY_SET, defaults={"description": FEEDBACK_QUERY_SET_DESCRIPTION}
    )
    return query_set


def _require_curator(user: Actor | None) -> User:
    account = signed_in(user)
    if account is None or not is_curator(account):
        raise PermissionDenied("Only curators review feedback.")
    return account


def _other_confirmed(feedback: AnswerFeedback, query: FactQuery) -> list[AnswerFeedback]:
    return list(
        AnswerFeedback.objects.filter(gold_query=query, status=Status.CONFIRMED).exclude(pk=feedback.pk).order_by("id")
    )


def _add_gold(feedback: AnswerFeedback, answer: str) -> FactQuery:
    """The feedback set's query for the question, with ``answer`` among its reference answers."""
    question = feedback.question.text.strip()
    try:
        validate_question_bytes(question)
    except ValidationError as exc:
        raise ValidationError({"gold": f"The question cannot become a gold-checked query: {exc.messages[0]}"}) from None
    query, _ = FactQuery.objects.select_for_update().get_or_create(
        query_set=feedback_query_set(),
        question=question,
        defaults={"origin": FactQuery.Origin.FEEDBACK, "tags": [FEEDBACK_TAG]},
    )
    references = usable_references(query.reference_answers)
    if any(_same_answer(answer, r) for r in references):
        return query
    supporters = _other_confirmed(feedback, query)
    supported = {normalize_answer(f.gold_answer) for f in supporters if f.gold_answer}
    own = (
        normalize_answer(feedback.gold_answer) if feedback.gold_query_id == query.pk and feedback.gold_answer else None
    )

    def replaceable(reference: str) -> bool:
        """The answer an earlier version of this feedback gave, and no other confirmed feedback gives."""
        return own is not None and normalize_answer(reference) == own and own not in supported

    others = [r for r in references if not replaceable(r)]
    if others:
        by = f" (from feedback {', '.join(f'#{f.pk}' for f in supporters)})" if supporters else ""
        raise ValidationError(
            {
                "gold": f"Fact query #{query.pk} already has the reference answer(s) {', '.join(others)}{by}, which "
                f"contradict {answer!r}. Reject the feedback you disagree with, or edit the query's reference "
                "answers in the admin, then confirm again."
            }
        )
    query.reference_answers = [answer]
    query.save(update_fields=["reference_answers"])
    return query


def _withdraw_gold(feedback: AnswerFeedback) -> None:
    """Take the feedback's reference answer back out of its query, unless another confirmed
    feedback on that query gives the same answer."""
    query = FactQuery.objects.select_for_update().filter(pk=feedback.gold_query_id).first()  # type: ignore[misc]  # None: no row
    if query is None or not feedback.gold_answer:
        return
    if any(
        f.gold_answer and _same_answer(f.gold_answer, feedback.gold_answer) for f in _other_confirmed(feedback, query)
    ):
        return
    kept = [r for r in usable_references(query.reference_answers) if not _same_answer(r, feedback.gold_answer)]
    if kept != query.reference_answers:
        query.reference_answers = kept
        query.save(update_fields=["reference_answers"])


def confirm_feedback(feedback: AnswerFeedback, reviewer: Actor | None) -> FactQuery | None:
    """Confirm it (curators): with a right answer, that answer becomes a reference answer of the
    question's query in the "Analyst feedback" set (created as needed) and the query is
    returned; without one, the feedback is recorded as a known wrong answer and None is
    returned. ValidationError on "gold" when the answer contradicts gold from other feedback."""
    curator = _require_curator(reviewer)
    with transaction.atomic():
        locked = AnswerFeedback.objects.select_for_update().select_related("question").get(pk=feedback.pk)
        answer = gold_answer_of(locked)
        query = None
        if answer is not None:
            if locked.kind == Kind.ANSWER_RIGHT and is_idk(answer):
                raise ValidationError({"gold": "The answer is “I don't know”: it cannot become a reference answer."})
            query = _add_gold(locked, answer)
        elif locked.gold_query_id is not None:
            _withdraw_gold(locked)  # an earlier version of it gave a right answer that it no longer gives
        locked.status = Status.CONFIRMED
        locked.reviewed_by = curator
        locked.reviewed_at = timezone.now()
        locked.gold_query = query
        locked.gold_answer = answer if query is not None and answer is not None else ""
        locked.save(update_fields=["status", "reviewed_by", "reviewed_at", "gold_query", "gold_answer", "updated_at"])
    feedback.refresh_from_db()
    return query


def reject_feedback(feedback: AnswerFeedback, reviewer: Actor | None) -> None:
    """Reject it (curators); gold it made is taken back (see the module's docstring)."""
    curator = _require_curator(reviewer)
    with transaction.atomic():
        locked = AnswerFeedback.objects.select_for_update().get(pk=feedback.pk)
        if locked.gold_query_id is not None:
            _withdraw_gold(locked)
        locked.status = Status.REJECTED
        locked.reviewed_by = curator
        locked.reviewed_at = timezone.now()
        locked.gold_query = None
        locked.gold_answer = ""
        locked.save(update_fields=["status", "reviewed_by", "reviewed_at", "gold_query", "gold_answer", "updated_at"])
    feedback.refresh_from_db()


@dataclass(frozen=True)
class FeedbackState:
    """One user's feedback on one question, as the answer page shows it."""

    verdict: AnswerFeedback | None  # the latest "right" or "wrong"
    by_source: dict[int, AnswerFeedback]  # "source wrong here", per source id


def feedback_state(question: Question, user: Viewer | None) -> FeedbackState:
    account = signed_in(user)
    if account is None:
        return FeedbackState(None, {})
    mine = list(AnswerFeedback.objects.filter(question=question, user=account).order_by("updated_at", "id"))
    verdict = None
    by_source: dict[int, AnswerFeedback] = {}
    for item in mine:
        if item.kind in ANSWER_VERDICTS:
            verdict = item  # the latest wins
        elif item.source_id is not None:
            by_source[item.source_id] = item
    return FeedbackState(verdict, by_source)
